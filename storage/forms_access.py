"""The curators' forms: an access rule (for a collection or a harvest definition) and an exclusion.

They only parse; the services (storage.services.access) validate and save, so each rule is checked
once and says its own message at the field it concerns.
"""

from django import forms
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from harvest.forms.planning import ParsingModelForm
from harvest.models import HarvestDefinition
from selection.models import Collection
from storage.models_access import AccessRule, Exclusion
from webarchive.versioning import VERSION_MAX, VersionFormMixin


class DateInput(forms.DateInput):
    input_type = "date"

    def __init__(self, attrs=None):
        super().__init__(attrs, format="%Y-%m-%d")


class AccessRuleCreateForm(ParsingModelForm):
    """A new rule: for one collection or one harvest definition that has none yet."""

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
        # Every target is offered, those with a rule marked, so that choosing one says where its rule is.
        for name, model in (("collection", Collection), ("harvest_definition", HarvestDefinition)):
            field = self.fields[name]
            field.queryset = model.objects.select_related("access_rule").order_by("name")
            field.label_from_instance = _target_label

    def clean(self):
        data = super().clean()
        if "collection" in data and "harvest_definition" in data:
            if bool(data["collection"]) == bool(data["harvest_definition"]):
                raise forms.ValidationError(_("Choose a collection or a harvest definition: one of the two."))
            for name in ("collection", "harvest_definition"):
                target = data[name]
                rule = getattr(target, "access_rule", None) if target else None
                if rule is not None:
                    # The unique constraint still guards; this says where the rule is.
                    self.add_error(
                        name,
                        format_html(
                            str(_('{target} already has an access rule: <a href="{url}">{rule}</a>.')),
                            target=target,
                            url=rule.get_absolute_url(),
                            rule=rule.describe(),
                        ),
                    )
        return data


def _target_label(target) -> str:
    if getattr(target, "access_rule", None) is not None:
        return _("%(name)s (has a rule)") % {"name": target}
    return str(target)


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


class ExclusionLiftForm(forms.Form):
    """Lifting an exclusion: the version of it the page showed."""

    seen = forms.IntegerField(min_value=1, max_value=VERSION_MAX)
