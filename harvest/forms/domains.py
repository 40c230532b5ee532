"""Forms of the Planning pages for domains, seed lists, configurations, templates and global traps.

They parse input; the services of ``harvest.services`` decide (names, aliases,
what may be removed), and their messages are shown at the field they name.
"""

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from harvest.models import Domain, DomainConfiguration, GlobalCrawlerTrapList, HarvestTemplate, SeedList
from harvest.models.domains import UNLIMITED
from harvest.validators import domain_name_normalise
from webarchive.forms import BootstrapMixin
from webarchive.versioning import VersionFormMixin

LIMIT_MESSAGE = _("A limit is a number of 0 or more, or -1 for no limit.")
# A list of domains is read whole and posted back once to be created: 2 MB is about
# 100,000 domains and stays under Django's DATA_UPLOAD_MAX_MEMORY_SIZE for the second post.
MAX_DOMAIN_LIST_BYTES = 2 * 1024 * 1024


def limit_field(label, help_text, *, required=True):
    return forms.IntegerField(
        label=label,
        help_text=help_text,
        required=required,
        min_value=UNLIMITED,
        error_messages={"min_value": LIMIT_MESSAGE},
    )


def lines_widget(rows=4):
    """A textarea for one-item-per-line input (regular expressions, URLs): no spell checking."""
    return forms.Textarea(attrs={"rows": rows, "spellcheck": "false", "class": "font-monospace"})


# Domains ---------------------------------------------------------------------------------------


class DomainCreateForm(BootstrapMixin, forms.Form):
    name = forms.CharField(
        label=_("Domain name"),
        max_length=255,
        widget=forms.TextInput(attrs={"autofocus": True, "spellcheck": "false"}),
        help_text=_(
            "The registered domain, such as example.fr or example.co.uk: "
            "not a host (www.example.fr) nor a URL."
        ),
    )
    comments = forms.CharField(label=_("Comments"), required=False, widget=forms.Textarea(attrs={"rows": 3}))
    crawler_traps = forms.CharField(
        label=_("Crawler traps"),
        required=False,
        widget=lines_widget(),
        help_text=Domain._meta.get_field("crawler_traps").help_text,
    )
    seeds = forms.CharField(
        label=_("Seeds"),
        required=False,
        widget=lines_widget(),
        help_text=_(
            "One URL per line. Empty: http and https, with and without www. "
            "They make the default seed list of the default configuration."
        ),
    )


class DomainListForm(BootstrapMixin, forms.Form):
    """A list of domains, pasted or uploaded; ``cleaned_data["text"]`` is the list either way."""

    text = forms.CharField(
        label=_("Domains"),
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false", "class": "font-monospace"}),
        help_text=_("One domain per line; lines starting with # are comments."),
    )
    file = forms.FileField(
        label=_("Or a text file"),
        required=False,
        help_text=_("UTF-8, one domain per line, up to 2 MB (about 100,000 domains)."),
    )
    skip_invalid = forms.BooleanField(
        label=_("Create the valid ones and skip the refused lines"), required=False
    )

    def clean(self):
        data = super().clean()
        text = data.get("text") or ""
        upload = data.get("file")
        if upload is not None:
            if text.strip():
                raise ValidationError(_("Paste a list or upload a file, not both."))
            content = upload.read(MAX_DOMAIN_LIST_BYTES + 1)
            if len(content) > MAX_DOMAIN_LIST_BYTES:
                self.add_error("file", _("The file is larger than 2 MB; split it into several lists."))
                return data
            try:
                text = content.decode("utf-8-sig")
            except UnicodeDecodeError:
                self.add_error("file", _("The file is not UTF-8 text; save it as UTF-8 and upload it again."))
                return data
        elif len(text.encode()) > MAX_DOMAIN_LIST_BYTES:
            self.add_error("text", _("The list is larger than 2 MB; split it into several lists."))
            return data
        if not text.strip():
            raise ValidationError(_("Paste a list of domains or upload a file."))
        data["text"] = text
        return data


class DomainEditForm(VersionFormMixin, BootstrapMixin, forms.ModelForm):
    default_configuration = forms.ModelChoiceField(
        queryset=DomainConfiguration.objects.none(),
        empty_label=None,
        label=_("Default configuration"),
        help_text=_("The configuration snapshot harvests use for this domain."),
    )

    class Meta:
        model = Domain
        fields = ["comments", "crawler_traps", "is_active", "default_configuration"]
        widgets = {"comments": forms.Textarea(attrs={"rows": 3}), "crawler_traps": lines_widget(6)}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["default_configuration"].queryset = self.instance.configurations.select_related(
            "template"
        ).order_by("name")


class DomainAliasForm(BootstrapMixin, forms.Form):
    alias_of = forms.CharField(
        label=_("Alias of"),
        required=False,
        max_length=255,
        widget=forms.TextInput(attrs={"spellcheck": "false", "placeholder": "example.fr"}),
        help_text=_(
            "The name of the domain this one is the same site as. Empty: this domain is no longer an alias."
        ),
    )

    def clean_alias_of(self) -> Domain | None:
        name = self.cleaned_data["alias_of"].strip()
        if not name:
            return None
        name = domain_name_normalise(name)
        try:
            return Domain.objects.get(name=name)
        except Domain.DoesNotExist:
            raise ValidationError(
                _("There is no domain %(name)s; create it first.") % {"name": name}
            ) from None


# Seed lists and configurations -----------------------------------------------------------------


class SeedListForm(VersionFormMixin, BootstrapMixin, forms.ModelForm):
    class Meta:
        model = SeedList
        fields = ["name", "seeds", "comments"]
        widgets = {"seeds": lines_widget(8), "comments": forms.Textarea(attrs={"rows": 2})}
        error_messages = {"seeds": {"required": _("A seed list needs at least one URL.")}}


class ConfigurationForm(VersionFormMixin, BootstrapMixin, forms.ModelForm):
    """A configuration of ``instance.domain``: its own seed lists, an active template (or the one it has)."""

    max_objects = limit_field(
        DomainConfiguration._meta.get_field("max_objects").verbose_name,
        DomainConfiguration._meta.get_field("max_objects").help_text,
    )
    max_bytes = limit_field(
        DomainConfiguration._meta.get_field("max_bytes").verbose_name,
        _("Bytes harvested at most (1 GB = 1073741824); -1 for no limit."),
    )

    class Meta:
        model = DomainConfiguration
        fields = [
            "name",
            "template",
            "seed_lists",
            "max_objects",
            "max_bytes",
            "max_request_rate",
            "comments",
        ]
        widgets = {
            "seed_lists": forms.CheckboxSelectMultiple,
            "comments": forms.Textarea(attrs={"rows": 2}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        domain = self.instance.domain
        seed_lists = self.fields["seed_lists"]
        seed_lists.queryset = domain.seed_lists.order_by("name")
        seed_lists.label_from_instance = lambda seed_list: seed_list.name
        seed_lists.help_text = _("The start URLs of the harvest; at least one.")
        seed_lists.error_messages["required"] = _("Choose at least one seed list.")
        current = self.instance.template_id
        self.fields["template"].queryset = HarvestTemplate.objects.filter(
            Q(is_active=True) | Q(pk=current)
        ).order_by("name")
        self.fields["template"].help_text = _("The crawler settings (only active templates are offered).")


class ConfigurationLimitsForm(BootstrapMixin, forms.Form):
    """New limits for every configuration the filters select; empty means unchanged."""

    max_objects = forms.IntegerField(
        label=_("New max objects"), required=False, help_text=_("Empty: unchanged; -1: no limit.")
    )
    max_bytes = forms.IntegerField(
        label=_("New max bytes"),
        required=False,
        help_text=_("In bytes (1 GB = 1073741824). Empty: unchanged; -1: no limit."),
    )
    # The selection the user saw: the filters, and how many configurations they matched.
    query = forms.CharField(widget=forms.HiddenInput, required=False, max_length=4000)
    expected_count = forms.IntegerField(widget=forms.HiddenInput, min_value=0)


# Templates and global crawler traps ------------------------------------------------------------

# The settings of a template as curators think of them; every crawler setting is in one group.
TEMPLATE_GROUPS = [
    (_("Scope"), ["depth_policy", "clicks", "max_hops", "accept_rules", "reject_rules"]),
    (_("Robots"), ["obey_robots"]),
    (_("Politeness"), ["min_delay", "max_delay", "delay_factor"]),
    (_("Extractors"), ["extract_javascript", "extract_sitemaps", "extract_forms", "stream_variants"]),
    (_("Deduplication and digest"), ["dedup", "dedup_verify", "digest_algorithm"]),
    (_("Browser rendering"), list(HarvestTemplate.RENDER_SETTINGS)),
]


class TemplateForm(VersionFormMixin, BootstrapMixin, forms.ModelForm):
    class Meta:
        model = HarvestTemplate
        fields = ["name", "description", "is_active", *HarvestTemplate.SETTINGS]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "accept_rules": lines_widget(3),
            "reject_rules": lines_widget(3),
        }
        help_texts = {
            "min_delay": _("Between two requests to the same host, at least."),
            "max_delay": _("Between two requests to the same host, at most."),
            "delay_factor": _("The delay is this many times the last fetch's duration, within min and max."),
        }

    def groups(self):
        """The form's fields grouped as the template page shows them: general first, then each group."""
        grouped = [(None, [self["name"], self["description"], self["is_active"]])]
        return grouped + [(label, [self[name] for name in names]) for label, names in TEMPLATE_GROUPS]


class TrapListForm(VersionFormMixin, BootstrapMixin, forms.ModelForm):
    class Meta:
        model = GlobalCrawlerTrapList
        fields = ["name", "description", "is_active", "traps"]
        widgets = {"description": forms.Textarea(attrs={"rows": 2}), "traps": lines_widget(10)}
        help_texts = {
            "is_active": _("The traps of active lists apply to every job."),
            "traps": _("One regular expression per line; URLs matching one are not harvested."),
        }
