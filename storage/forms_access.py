"""The curators' forms: an access rule (for a collection or a harvest definition) and an exclusion.

They only parse; the services (storage.services.access) validate and save, so each rule is checked
once and says its own message at the field it concerns.
"""

from django import forms
from django.utils.translation import gettext_lazy as _

from harvest.forms.planning import ParsingModelForm
from harvest.models import HarvestDefinition
from selection.models import Collection
from storage.models_access import AccessRule, Exclusion
from webarchive.versioning import VersionFormMixin


class DateInput(forms.DateInput):
    input_type = "date"

    def __init__(self, attrs=None):
        super().__init__(attrs, format="%Y-%m-%d")


class AccessRuleCreateForm(ParsingModelForm):
    """A new rule: for one collection or one harvest definition (those without a rule yet)."""

    class Meta:
        model = AccessRule
        fields = ["collection", "harvest_definition", "level", "embargo_until", "note"]
        widgets = {"embargo_until": DateInput(), "note": forms.Textarea(attrs={"rows": 2})}
        help_texts = {
            "collection": _("The captures of the harvest definitions this collection is mapped to."),
            "harvest_definition": _("Or: the captures of this harvest definition's jobs."),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collection"].queryset = Collection.objects.filter(access_rule__isnull=True).order_by(
            "name"
        )
        self.fields["harvest_definition"].queryset = HarvestDefinition.objects.filter(
            access_rule__isnull=True
        ).order_by("name")

    def clean(self):
        data = super().clean()
        if bool(data.get("collection")) == bool(data.get("harvest_definition")):
            raise forms.ValidationError(_("Choose a collection or a harvest definition: one of the two."))
        return data


class AccessRuleEditForm(VersionFormMixin, ParsingModelForm):
    """Who may read the captures, and from when: the rule stays with its collection or definition."""

    class Meta:
        model = AccessRule
        fields = ["level", "embargo_until", "note"]
        widgets = {"embargo_until": DateInput(), "note": forms.Textarea(attrs={"rows": 2})}


class ExclusionForm(VersionFormMixin, ParsingModelForm):
    """A take-down: what (a URL, a prefix, a domain), why, who asked, when, until when."""

    class Meta:
        model = Exclusion
        fields = ["kind", "target", "reason", "requested_by", "requested_on", "ends_on"]
        widgets = {
            "target": forms.TextInput(attrs={"spellcheck": "false", "autocapitalize": "off"}),
            "reason": forms.Textarea(attrs={"rows": 3}),
            "requested_on": DateInput(),
            "ends_on": DateInput(),
        }
