"""factory_boy factories for the tests."""

import factory
from django.contrib.auth import get_user_model

from selection.choices import Budget, CheckStatus, Depth, Frequency
from selection.models import Collection, Record, SavedSearch, Theme
from webarchive.permissions import user_set_roles
from webarchive.urlnorm import registered_domain, url_host, url_key

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


class ThemeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Theme

    collection = factory.SubFactory(CollectionFactory)
    name = factory.Sequence(lambda n: f"Theme {n}")


class RecordFactory(factory.django.DjangoModelFactory):
    """A record written directly, for tests that need records to exist (proposals go through services)."""

    class Meta:
        model = Record
        skip_postgeneration_save = True

    collection = factory.SubFactory(CollectionFactory)
    theme = factory.LazyAttribute(lambda r: ThemeFactory(collection=r.collection))
    url = factory.Sequence(lambda n: f"http://site{n}.example.org/")
    url_key = factory.LazyAttribute(lambda r: url_key(r.url))
    host = factory.LazyAttribute(lambda r: url_host(r.url))
    registered_domain = factory.LazyAttribute(lambda r: registered_domain(url_host(r.url)))
    responsible = factory.SubFactory(UserFactory)
    created_by = factory.SelfAttribute("responsible")
    modified_by = factory.SelfAttribute("responsible")
    budget = Budget.SMALL
    frequency = Frequency.MONTHLY
    depth = Depth.HOST
    check_status = CheckStatus.OK


class SavedSearchFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SavedSearch

    user = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"Search {n}")
    query = "status=proposed"
