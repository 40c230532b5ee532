"""factory_boy factories for the tests."""

import factory
from django.contrib.auth import get_user_model

from selection.models import Collection
from webarchive.permissions import user_set_roles

PASSWORD = "correct horse battery staple"


class UserFactory(factory.django.DjangoModelFactory):
    """A local user; ``roles=[Role.CURATOR]`` gives roles, the password is ``PASSWORD``."""

    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    first_name = factory.Faker("first_name")
    last_name = factory.Faker("last_name")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.django.Password(PASSWORD)

    @factory.post_generation
    def roles(self, create, extracted, **kwargs):
        if create and extracted:
            user_set_roles(user=self, roles=extracted)


class CollectionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Collection
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Collection {n}")
    description = factory.Faker("sentence")

    @factory.post_generation
    def members(self, create, extracted, **kwargs):
        if create and extracted:
            self.members.set(extracted)
