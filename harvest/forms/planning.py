"""Forms of the planning pages: harvest definitions, schedules, channels, mappings, the transfer.

They parse input; the services validate and save. A model form here takes its
fields (labels, choices, help) from the model but does not validate the
instance itself: the service calls ``full_clean()`` on the object it saves and
the page puts the errors at the fields they name (``ServiceFormView``). An edit
form carries the version it showed (``VersionFormMixin``), which the page gives
the service as ``expected_version``.
"""

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q, UniqueConstraint
from django.utils.translation import gettext_lazy as _

from harvest.choices import EndKind, HarvestKind
from harvest.models import (
    BudgetMapping,
    CollectionMapping,
    Domain,
    DomainConfiguration,
    HarvestChannel,
    HarvestDefinition,
    HarvestTemplate,
    Schedule,
)
from harvest.services.planning import default_channel
from harvest.validators import domain_name_normalise
from selection.models import Collection
from webarchive.forms import BootstrapMixin
from webarchive.versioning import VersionFormMixin


class DateTimeLocalInput(forms.DateTimeInput):
    """The browser's date and time picker; the value is read in the site's time zone."""

    input_type = "datetime-local"

    def __init__(self, attrs=None):
        super().__init__(attrs, format="%Y-%m-%dT%H:%M")


class ParsingModelForm(BootstrapMixin, forms.ModelForm):
    """A model form that only parses: the service validates the object (one rule, one message)."""

    def _post_clean(self):
        # ModelForm would validate a copy of the instance here; the service does it on the
        # object it saves, so a rule is checked once and its message is the service's.
        pass


class UniqueNameMixin:
    """Says at the name field, before saving, that the name is taken (the constraint still guards)."""

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        model = self._meta.model
        if model.objects.filter(name__iexact=name).exclude(pk=self.instance.pk).exists():
            raise ValidationError(_name_constraint_message(model), code="unique")
        return name


def _name_constraint_message(model) -> str:
    for constraint in model._meta.constraints:
        if isinstance(constraint, UniqueConstraint) and constraint.name.endswith("name_unique_ci"):
            return constraint.get_violation_error_message()
    return _("This name is already used.")


# Schedules -------------------------------------------------------------------------------------


class ScheduleForm(VersionFormMixin, UniqueNameMixin, ParsingModelForm):
    """Every N units, any time or at a fixed time, from a start; ends never, after N runs or at a date."""

    class Meta:
        model = Schedule
        fields = [
            "name",
            "comments",
            "every",
            "unit",
            "at_minute",
            "at_hour",
            "at_weekday",
            "at_day",
            "start",
            "end_kind",
            "max_runs",
            "end_date",
        ]
        widgets = {
            "comments": forms.Textarea(attrs={"rows": 2}),
            "start": DateTimeLocalInput(),
            "end_date": DateTimeLocalInput(),
            "end_kind": forms.RadioSelect,
            "every": forms.NumberInput(attrs={"min": 1}),
            "at_minute": forms.NumberInput(attrs={"min": 0, "max": 59, "placeholder": _("any")}),
            "at_hour": forms.NumberInput(attrs={"min": 0, "max": 23, "placeholder": _("any")}),
            "at_day": forms.NumberInput(attrs={"min": 1, "max": 31, "placeholder": _("any")}),
        }
        labels = {
            "every": _("Every"),
            "unit": _("Unit"),
            "at_minute": _("At minute"),
            "at_hour": _("At hour"),
            "at_weekday": _("On weekday"),
            "at_day": _("On day of the month"),
            "start": _("Starts on"),
            "end_kind": _("Ends"),
            "max_runs": _("Number of runs"),
            "end_date": _("Until"),
        }
        help_texts = {
            "at_minute": _("0 to 59. For periods of hours or more; empty: the start's minute."),
            "at_hour": _("0 to 23. For periods of days or more; empty: the start's hour."),
            "at_weekday": _("For periods of weeks; empty: the start's weekday."),
            "at_day": _(
                "1 to 31. For periods of months; empty: the start's day. "
                "In a shorter month the run is on its last day."
            ),
            "start": _("In the site's time zone. The first run is at or after this date."),
            "max_runs": _("When it ends after a number of runs."),
            "end_date": _("When it ends at a date: no run after it."),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["end_kind"].choices = EndKind.choices  # no empty choice among the radios
        self.fields["at_weekday"].choices = [("", _("any")), *self.fields["at_weekday"].choices[1:]]


# Channels --------------------------------------------------------------------------------------


class ChannelForm(VersionFormMixin, UniqueNameMixin, ParsingModelForm):
    class Meta:
        model = HarvestChannel
        fields = ["name", "queue", "is_snapshot", "is_default", "comments"]
        widgets = {"comments": forms.Textarea(attrs={"rows": 2})}
        help_texts = {
            "is_snapshot": _("Snapshot (broad) harvests run on it; otherwise selective harvests."),
            "is_default": _(
                "New harvest definitions of its kind use this channel; the previous default stops being one."
            ),
        }


# Harvest definitions ---------------------------------------------------------------------------

SELECTIVE_FIELDS = [
    "name",
    "comments",
    "is_active",
    "schedule",
    "channel",
    "crawler_traps",
    "news",
    "news_feeds",
]
SNAPSHOT_FIELDS = [
    "name",
    "comments",
    "is_active",
    "channel",
    "max_objects_per_domain",
    "max_bytes_per_domain",
    "max_job_seconds",
    "continue_from",
    "crawler_traps",
]


class DefinitionForm(VersionFormMixin, UniqueNameMixin, ParsingModelForm):
    """The fields of a selective or a snapshot harvest definition (``kind`` chooses which)."""

    class Meta:
        model = HarvestDefinition
        fields = sorted(set(SELECTIVE_FIELDS) | set(SNAPSHOT_FIELDS))
        widgets = {
            "comments": forms.Textarea(attrs={"rows": 2}),
            "crawler_traps": forms.Textarea(attrs={"rows": 3, "class": "font-monospace"}),
        }

    def __init__(self, *args, kind: str, **kwargs):
        super().__init__(*args, **kwargs)
        wanted = SELECTIVE_FIELDS if kind == HarvestKind.SELECTIVE else SNAPSHOT_FIELDS
        # In the kind's order; "seen" (the version shown) only when editing.
        self.fields = {name: self.fields[name] for name in [*wanted, "seen"] if name in self.fields}
        snapshot = kind == HarvestKind.SNAPSHOT
        channel = self.fields["channel"]
        channel.queryset = HarvestChannel.objects.filter(
            Q(is_snapshot=snapshot) | Q(pk=self.instance.channel_id)
        )
        channel.empty_label = None
        channel.help_text = _("The Celery queue its jobs go to.")
        if self.instance.pk is None:
            channel.initial = default_channel(kind)
        if snapshot:
            continue_from = self.fields["continue_from"]
            continue_from.queryset = HarvestDefinition.objects.filter(kind=HarvestKind.SNAPSHOT).exclude(
                pk=self.instance.pk
            )
            continue_from.empty_label = _("— none: every domain —")
        else:
            schedule = self.fields["schedule"]
            schedule.required = True
            schedule.error_messages["required"] = _("A selective harvest needs a schedule.")
            schedule.help_text = _("Its next run follows the schedule from now on.")
            feeds = self.fields["news_feeds"]
            feeds.queryset = HarvestDefinition.objects.filter(kind=HarvestKind.SELECTIVE, news=False).exclude(
                pk=self.instance.pk
            )
            feeds.empty_label = _("— none —")


class ConfigurationAttachForm(BootstrapMixin, forms.Form):
    """A domain configuration to attach to a selective harvest, by domain name and configuration name."""

    domain = forms.CharField(label=_("Domain"), max_length=255)
    configuration = forms.CharField(
        label=_("Configuration"),
        max_length=200,
        required=False,
        help_text=_("Empty: the domain's default configuration."),
    )

    def clean(self):
        data = super().clean()
        if "domain" not in data:
            return data
        try:
            name = domain_name_normalise(data["domain"])
        except ValidationError as error:
            self.add_error("domain", error)
            return data
        domain = Domain.objects.filter(name=name).select_related("default_configuration").first()
        if domain is None:
            self.add_error("domain", _("There is no domain %(name)s.") % {"name": name})
            return data
        wanted = data.get("configuration", "").strip()
        if not wanted:
            configuration = domain.default_configuration
        else:
            configuration = DomainConfiguration.objects.filter(domain=domain, name=wanted).first()
        if configuration is None:
            names = ", ".join(domain.configurations.order_by("name").values_list("name", flat=True)) or "—"
            self.add_error(
                "configuration",
                _("%(domain)s has no configuration named “%(name)s”; it has: %(names)s.")
                % {"domain": domain.name, "name": wanted, "names": names},
            )
            return data
        data["found"] = configuration
        return data


# Mappings from selection -----------------------------------------------------------------------


class SelectiveDefinitionField(forms.ModelChoiceField):
    default_error_messages = {
        "invalid_choice": _(
            "Choose a selective harvest definition: records are transferred to selective harvests only."
        )
    }

    def __init__(self, **kwargs):
        kwargs.setdefault("queryset", HarvestDefinition.objects.filter(kind=HarvestKind.SELECTIVE))
        super().__init__(**kwargs)


class CollectionMappingForm(ParsingModelForm):
    harvest_definition = SelectiveDefinitionField(label=_("Harvest definition"))

    class Meta:
        model = CollectionMapping
        fields = ["collection", "frequency", "harvest_definition"]


class BudgetMappingForm(ParsingModelForm):
    class Meta:
        model = BudgetMapping
        fields = ["budget", "depth", "template", "browser_template", "max_objects", "max_bytes"]
        help_texts = {
            "max_objects": _("Per configuration; -1 for no limit."),
            "max_bytes": _("Per configuration; -1 for no limit."),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Active templates, and the ones the mapping has now (kept until changed).
        for name in ("template", "browser_template"):
            self.fields[name].queryset = HarvestTemplate.objects.filter(
                Q(is_active=True) | Q(pk=getattr(self.instance, f"{name}_id"))
            ).order_by("name")
        self.fields["browser_template"].empty_label = _(
            "— none: records whose site needs a browser are skipped —"
        )


# The transfer ----------------------------------------------------------------------------------


class TransferForm(BootstrapMixin, forms.Form):
    """What to transfer: one collection, or every collection mapped to a selective definition."""

    collection = forms.ModelChoiceField(
        queryset=Collection.objects.order_by("name"),
        required=False,
        label=_("Collection"),
        help_text=_("Its validated, active records, for every frequency mapped."),
    )
    harvest_definition = SelectiveDefinitionField(
        required=False,
        label=_("or a selective harvest definition"),
        help_text=_("Every collection mapped to it."),
    )

    def clean(self):
        data = super().clean()
        collection, definition = data.get("collection"), data.get("harvest_definition")
        if self.errors:
            return data
        if collection is None and definition is None:
            raise ValidationError(_("Choose a collection or a harvest definition."))
        if collection is not None and definition is not None:
            raise ValidationError(_("Choose a collection or a harvest definition, not both."))
        return data
