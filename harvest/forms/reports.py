"""The forms of the Reports area: which table, which year, what to compare."""

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from harvest.models import Dimension, HarvestDefinition
from harvest.reports import TABLE_CHOICES


class TableChoiceForm(forms.Form):
    table = forms.ChoiceField(
        choices=TABLE_CHOICES, initial="by-year", label=gettext_lazy("Table"), required=False
    )


class YearForm(forms.Form):
    year = forms.IntegerField(min_value=1990, max_value=9999, required=False, label=gettext_lazy("Year"))


class CompareForm(forms.Form):
    year = forms.IntegerField(min_value=1990, max_value=9999, required=False, label=gettext_lazy("Year"))
    dimension = forms.ChoiceField(
        choices=Dimension.choices, initial=Dimension.MIME_FAMILY, required=False, label=gettext_lazy("By")
    )
    harvest_definition = forms.ModelChoiceField(
        queryset=HarvestDefinition.objects.order_by("name"),
        required=False,
        label=gettext_lazy("Harvest definition"),
    )
    run_a = forms.IntegerField(min_value=1, required=False, label=gettext_lazy("Run"))
    run_b = forms.IntegerField(min_value=1, required=False, label=gettext_lazy("against run"))

    def clean(self):
        data = super().clean()
        runs = [data.get("run_a"), data.get("run_b")]
        if any(runs) and not data.get("harvest_definition"):
            self.add_error("harvest_definition", _("Choose the harvest definition whose runs to compare."))
        if any(runs) and not all(runs):
            self.add_error("run_b", _("Give both runs."))
        return data
