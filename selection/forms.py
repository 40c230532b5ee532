"""Forms of the selection pages. They parse input; the services decide."""

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from selection import csvio
from selection.choices import Budget, CollectionKind, Depth, Frequency, RecordStatus
from selection.models import Collection, CompatibilityRule, Record, Theme
from webarchive.forms import BootstrapMixin
from webarchive.permissions import SELECTION_PEOPLE, people_with_roles
from webarchive.versioning import VersionFormMixin


def split_keywords(text: str) -> list[str]:
    """Keywords typed as ``a; b, c`` → ``["a", "b", "c"]``."""
    return [part.strip() for part in text.replace(",", ";").split(";") if part.strip()]


class UserChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, user):
        name = user.get_full_name()
        return f"{name} ({user.username})" if name else user.username


def selection_people(*, keep=()):
    """Who may be a record's responsible librarian or a collection's member: librarians and curators
    (never a service account such as the replay account), and ``keep``, the ids already chosen."""
    return people_with_roles(SELECTION_PEOPLE, keep=keep)


class UrlEntryForm(BootstrapMixin, forms.Form):
    """Stage 1 of a proposal: the URL and the collection it goes into."""

    collection = forms.ModelChoiceField(queryset=Collection.objects.none(), label=_("Collection"))
    url = forms.CharField(label=_("URL"), max_length=2100, widget=forms.TextInput(attrs={"autofocus": True}))

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collection"].queryset = Collection.objects.writable_by(user).filter(is_active=True)


class RecordForm(BootstrapMixin, forms.Form):
    """Stage 2 of a proposal, and the edit form of a record."""

    url = forms.CharField(label=_("URL"), max_length=2100)
    supplementary_urls = forms.CharField(
        label=_("Supplementary URLs"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("One URL per line: a sitemap, a feed, an index page."),
    )
    responsible = UserChoiceField(queryset=selection_people(), label=_("Responsible librarian"))
    budget = forms.ChoiceField(choices=Budget.choices, label=_("Budget"))
    frequency = forms.ChoiceField(choices=Frequency.choices, label=_("Frequency"))
    depth = forms.ChoiceField(choices=Depth.choices, label=_("Depth"))
    needs_browser = forms.BooleanField(
        label=_("The site needs a browser"),
        required=False,
        help_text=Record._meta.get_field("needs_browser").help_text,
    )
    theme = forms.ModelChoiceField(queryset=Theme.objects.none(), label=_("Theme"))
    keywords = forms.CharField(
        label=_("Keywords"),
        required=False,
        help_text=_("Separated by semicolons or commas."),
        max_length=2000,
    )
    content_notes = forms.CharField(
        label=_("Content notes"), required=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    technical_notes = forms.CharField(
        label=_("Technical notes"), required=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    is_active = forms.BooleanField(label=_("Active"), required=False, initial=True)
    check_override_reason = forms.CharField(
        label=_("Why select this URL although its check failed (curators)"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    version = forms.IntegerField(widget=forms.HiddenInput, required=False)
    check_token = forms.CharField(widget=forms.HiddenInput, required=False)

    def __init__(
        self, *args, collection: Collection, budget_ranges=None, allow_override: bool = False, **kwargs
    ):
        super().__init__(*args, **kwargs)
        self.fields["responsible"].queryset = selection_people(keep=[self.initial.get("responsible")])
        if not allow_override:  # only a curator, only for a URL that failed its check
            del self.fields["check_override_reason"]
        self.fields["theme"].queryset = collection.themes.filter(is_active=True)
        if budget_ranges:
            self.fields["budget"].choices = [
                (value, f"{label} ({budget_ranges[value]})") for value, label in Budget.choices
            ]

    def clean_keywords(self):
        return split_keywords(self.cleaned_data["keywords"])


class RecordStatusForm(BootstrapMixin, forms.Form):
    status = forms.ChoiceField(choices=RecordStatus.choices, label=_("Status"))
    reason = forms.CharField(
        label=_("Reason"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("Required to reject a record."),
    )
    version = forms.IntegerField(widget=forms.HiddenInput, required=False)


class RecordTransferForm(BootstrapMixin, forms.Form):
    collection = forms.ModelChoiceField(queryset=Collection.objects.none(), label=_("To the collection"))
    theme = forms.ModelChoiceField(
        queryset=Theme.objects.filter(is_active=True).select_related("collection"),
        label=_("Theme in that collection"),
    )
    version = forms.IntegerField(widget=forms.HiddenInput, required=False)

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collection"].queryset = Collection.objects.writable_by(user).filter(is_active=True)
        self.fields["theme"].label_from_instance = lambda theme: f"{theme.collection} — {theme.name}"


class BulkEditForm(BootstrapMixin, forms.Form):
    """The changes to make to every selected record; empty fields are left as they are."""

    responsible = UserChoiceField(
        queryset=selection_people(), required=False, label=_("Responsible librarian")
    )
    collection = forms.ModelChoiceField(
        queryset=Collection.objects.none(), required=False, label=_("Move to the collection")
    )
    theme = forms.ModelChoiceField(
        queryset=Theme.objects.filter(is_active=True).select_related("collection"),
        required=False,
        label=_("Theme"),
    )
    add_keywords = forms.CharField(label=_("Add keywords"), required=False, max_length=2000)
    remove_keywords = forms.CharField(label=_("Remove keywords"), required=False, max_length=2000)
    budget = forms.ChoiceField(choices=[("", "—"), *Budget.choices], required=False, label=_("Budget"))
    frequency = forms.ChoiceField(
        choices=[("", "—"), *Frequency.choices], required=False, label=_("Frequency")
    )
    depth = forms.ChoiceField(choices=[("", "—"), *Depth.choices], required=False, label=_("Depth"))
    needs_browser = forms.TypedChoiceField(
        choices=[("", "—"), ("true", _("Needs a browser")), ("false", _("Does not need a browser"))],
        coerce=lambda value: value == "true",
        empty_value=None,
        required=False,
        label=_("The site needs a browser"),
    )
    is_active = forms.TypedChoiceField(
        choices=[("", "—"), ("true", _("Active")), ("false", _("Inactive"))],
        coerce=lambda value: value == "true",
        empty_value=None,
        required=False,
        label=_("Active"),
    )
    status = forms.ChoiceField(
        choices=[("", "—"), *RecordStatus.choices], required=False, label=_("Status (curators)")
    )
    status_reason = forms.CharField(label=_("Reason for the status"), required=False)

    def __init__(self, *args, user, may_validate: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collection"].queryset = Collection.objects.writable_by(user).filter(is_active=True)
        self.fields["theme"].label_from_instance = lambda theme: f"{theme.collection} — {theme.name}"
        if not may_validate:
            del self.fields["status"]
            del self.fields["status_reason"]

    def clean_add_keywords(self):
        return split_keywords(self.cleaned_data["add_keywords"])

    def clean_remove_keywords(self):
        return split_keywords(self.cleaned_data["remove_keywords"])


class SavedSearchForm(BootstrapMixin, forms.Form):
    name = forms.CharField(label=_("Name of the search"), max_length=100)
    query = forms.CharField(widget=forms.HiddenInput, required=False, max_length=2000)


class CompatibilityRuleForm(BootstrapMixin, forms.ModelForm):
    class Meta:
        model = CompatibilityRule
        fields = ["budget", "frequency", "depth", "reason"]
        help_texts = {
            "budget": _("Empty: any budget."),
            "frequency": _("Empty: any frequency."),
            "depth": _("Empty: any depth."),
        }


class CollectionForm(VersionFormMixin, BootstrapMixin, forms.ModelForm):
    members = forms.ModelMultipleChoiceField(
        queryset=selection_people(),
        required=False,
        label=_("Members"),
        widget=forms.SelectMultiple(attrs={"size": 8}),
        help_text=_("Librarians who may propose and edit records in this collection."),
    )

    class Meta:
        model = Collection
        fields = [
            "name",
            "kind",
            "description",
            "is_active",
            "default_budget",
            "default_frequency",
            "default_depth",
            "frequency_most_often",
            "frequency_least_often",
            "follow_suggestions",
            "members",
        ]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 3}),
            "kind": forms.Select(choices=CollectionKind.choices),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        current = list(self.instance.members.values_list("pk", flat=True)) if self.instance.pk else []
        self.fields["members"].queryset = selection_people(keep=current)
        # The suggestion bounds: left out of a form (or an older client), they keep their value.
        for name in ("frequency_most_often", "frequency_least_often"):
            self.fields[name].required = False

    def _bound(self, name: str) -> str:
        return self.cleaned_data.get(name) or getattr(self.instance, name)

    def clean_frequency_most_often(self):
        return self._bound("frequency_most_often")

    def clean_frequency_least_often(self):
        return self._bound("frequency_least_often")


class ThemeForm(BootstrapMixin, forms.Form):
    name = forms.CharField(label=_("New theme"), max_length=200)


class RecordImportForm(forms.Form):
    collection = forms.ModelChoiceField(
        queryset=Collection.objects.all(),
        label=_("Collection"),
        help_text=_("Where new records go when their row names no collection."),
    )
    file = forms.FileField(
        label=_("CSV file"),
        help_text=_(
            "UTF-8 or Windows-1252, separated by commas or semicolons; the first line names the columns."
        ),
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        # Only the collections the user writes in are offered; another one posted is refused (403).
        self.writable = list(Collection.objects.writable_by(user).order_by("name"))
        collection = self.fields["collection"]
        collection.widget.choices = [("", "---------"), *((c.pk, str(c)) for c in self.writable)]
        collection.widget.attrs["class"] = "form-select"
        self.fields["file"].widget.attrs.update({"class": "form-control", "accept": ".csv,text/csv"})

    def clean_file(self):
        upload = self.cleaned_data["file"]
        content = upload.read(csvio.MAX_BYTES + 1)
        if len(content) > csvio.MAX_BYTES:
            raise ValidationError(
                _("The file is larger than %(size)d MB; split it into several files.")
                % {"size": csvio.MAX_BYTES // (1024 * 1024)}
            )
        return content, upload.name
