"""What the Planning pages share: the form view about one object (or its domain), messages, dates."""

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.functional import cached_property

from harvest.models import Domain
from webarchive.permissions import Area
from webarchive.views import (
    ServiceFormView,
)

PLANNING = Area.PLANNING
SHOWN_NAMES = 200  # of the new and known names of a checked list; the counts say how many in all
SHOWN_REFUSALS = 1000  # refused lines listed after a check
MAX_BULK_LIMITS = 10_000  # configurations changed by one bulk change of budget


def local_date(value) -> str:
    return date_format(timezone.localtime(value), "Y-m-d")


class PlanningFormView(ServiceFormView):
    """A Planning form. With ``model``, it is about the object whose pk is in the URL; a ModelForm
    gets a copy of it (the form writes its input into its instance, the page keeps the saved one).

    ``title`` may name the object (``%(name)s``) or its domain (``%(domain)s``).
    """

    area = PLANNING
    template_name = "harvest/domain_form.html"
    model = None
    related: tuple[str, ...] = ()  # select_related of the object
    cancel = ""  # URL name of the page "Cancel" goes back to, when there is no object nor domain

    @cached_property
    def object(self):
        return get_object_or_404(self.model.objects.select_related(*self.related), pk=self.kwargs["pk"])

    @cached_property
    def domain(self) -> Domain | None:
        """The domain the page is about: in the URL, the object itself, or the object's."""
        if "domain_pk" in self.kwargs:
            return get_object_or_404(Domain, pk=self.kwargs["domain_pk"])
        if self.model is None:
            return None
        return self.object if isinstance(self.object, Domain) else getattr(self.object, "domain", None)

    def get_form_kwargs(self):
        kwargs = super().get_form_kwargs()
        if self.model is not None and issubclass(self.get_form_class(), forms.ModelForm):
            kwargs["instance"] = self.model.objects.get(pk=self.object.pk)
        return kwargs

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        obj = self.object if self.model is not None else None
        names = {"name": getattr(obj, "name", ""), "domain": self.domain}
        back = next((o for o in (obj, self.domain) if hasattr(o, "get_absolute_url")), None)
        context.update(
            {
                "title": str(self.title) % names,
                "object": obj,
                "domain": self.domain,
                "cancel_url": back.get_absolute_url() if back else reverse(self.cancel),
            }
        )
        return context


def messages_from(request, error: ValidationError) -> None:
    for message in error.messages:
        messages.error(request, message)
