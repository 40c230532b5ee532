"""The search form of the Access area: a URL as a reader types it, and how to match it."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _

from harvest.models import HarvestDefinition, Job
from storage.models import HARVEST_NOTE_MAX_LENGTH, StorageNode
from storage.services.dedup_runs import ArchiveSelection
from webarchive.forms import BootstrapMixin

MAX_URL_LENGTH = 2000
SCHEMES = ("http", "https", "ftp")  # what archives hold (imported ones may have ftp)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_HOST_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


class MatchType(models.TextChoices):
    """How a searched URL is matched: itself, or every URL that starts with it."""

    EXACT = "exact", _("This URL")
    PREFIX = "prefix", _("Every URL starting with it")


def search_url(text: str) -> str:
    """A URL as typed, made one that the index can key (``example.com/a`` → ``http://example.com/a``).

    Only the scheme is added: the SURT key then folds case, http/https, ``www.`` and the order of
    query parameters, as pywb does. Raises ``ValidationError`` with what is wrong.
    """
    text = text.strip()
    if not text:
        raise ValidationError(_("Enter the URL to look for."), code="required")
    if any(char.isspace() for char in text):
        raise ValidationError(_("A URL cannot contain spaces."), code="spaces")
    if not _SCHEME.match(text):
        text = f"http://{text}"
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError as error:
        raise ValidationError(
            _("This is not a valid URL (%(error)s)."), params={"error": error}, code="invalid"
        ) from error
    if parts.scheme.lower() not in SCHEMES:
        raise ValidationError(
            _("The archive holds http and https URLs, not “%(scheme)s” ones."),
            params={"scheme": parts.scheme},
            code="scheme",
        )
    _check_host(parts.hostname or "")
    return text


def _check_host(host: str) -> None:
    if not host:
        raise ValidationError(_("The URL has no host name."), code="host")
    try:
        ipaddress.ip_address(host)
        return
    except ValueError:
        pass
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        ascii_host = ""
    labels = ascii_host.rstrip(".").split(".")
    if not ascii_host or not all(_HOST_LABEL.match(label) for label in labels):
        raise ValidationError(_("“%(host)s” is not a valid host name."), params={"host": host}, code="host")


class CaptureSearchForm(BootstrapMixin, forms.Form):
    """Search the archive by URL: the captures of one URL, or the URLs under a prefix."""

    url = forms.CharField(
        label=_("URL"),
        max_length=MAX_URL_LENGTH,
        strip=False,  # search_url strips, and says so when nothing is left
        widget=forms.TextInput(attrs={"autofocus": True, "spellcheck": "false", "autocapitalize": "off"}),
        error_messages={"required": _("Enter the URL to look for.")},
        help_text=_("With or without http:// or www.; end it with * to list every URL that starts with it."),
    )
    match = forms.ChoiceField(
        label=_("Match"),
        choices=MatchType.choices,
        required=False,
        widget=forms.RadioSelect,
        error_messages={"invalid_choice": _("“%(value)s” is not a way to match: choose exact or prefix.")},
    )

    def clean_url(self) -> str:
        text = self.cleaned_data["url"].strip()
        # pywb's "example.com/path*" notation: a prefix search.
        self.star = text.endswith("*")
        return search_url(text.rstrip("*") if self.star else text)

    def clean_match(self) -> str:
        return self.cleaned_data.get("match") or MatchType.EXACT

    def clean(self):
        data = super().clean()
        if getattr(self, "star", False) and "match" in data:
            data["match"] = MatchType.PREFIX
            self.data = self.data.copy()
            self.data["match"] = MatchType.PREFIX  # the choice shown is the search made
        return data


class StorageNodeForm(BootstrapMixin, forms.Form):
    """A new storage node, a directory or an S3 bucket and prefix; the service (node_create) checks the
    root, the bucket, the profile and the name."""

    name = forms.SlugField(
        label=_("Name"),
        max_length=50,
        help_text=_("Letters, digits, - and _; its queue is storage-<name> if it has a local worker."),
    )
    location = forms.CharField(
        label=_("Location"), max_length=100, help_text=_("Site or room: replicas prefer distinct locations.")
    )
    backend = forms.ChoiceField(
        label=_("Backend"),
        choices=StorageNode.Backend.choices,
        initial=StorageNode.Backend.DIRECTORY,
        required=False,  # left out: a directory, as before S3 nodes
    )
    root = forms.CharField(
        label=_("Root directory"),
        max_length=1000,
        required=False,
        widget=forms.TextInput(attrs={"class": "font-monospace", "spellcheck": "false"}),
        help_text=_(
            "Directory nodes: an absolute path (local or mounted) that no other node uses; it is created "
            "with a marker naming the node."
        ),
    )
    bucket = forms.CharField(
        label=_("Bucket"),
        max_length=63,
        required=False,
        widget=forms.TextInput(attrs={"class": "font-monospace", "spellcheck": "false"}),
        help_text=_("S3 nodes: the bucket (created if missing), 3 to 63 lowercase letters, digits, . and -."),
    )
    prefix = forms.CharField(
        label=_("Prefix"),
        max_length=900,
        required=False,
        widget=forms.TextInput(attrs={"class": "font-monospace", "spellcheck": "false"}),
        help_text=_("S3 nodes: the keys' prefix in the bucket (empty: the whole bucket), no other node's."),
    )
    profile = forms.CharField(
        label=_("Credentials profile"),
        max_length=100,
        required=False,
        help_text=_(
            "S3 nodes: the name of a profile of the STORAGE_S3_PROFILES setting, which holds the endpoint "
            "and the keys (never stored with the node)."
        ),
    )
    quota = forms.IntegerField(
        label=_("Quota (bytes)"),
        min_value=1,
        required=False,
        help_text=_("S3 nodes: the space it may use; empty: unknown (an object store has no disk size)."),
    )
    local_worker = forms.BooleanField(
        label=_("Has a local worker (its copies and audits run on its own queue)"), required=False
    )

    def clean_backend(self):
        return self.cleaned_data["backend"] or StorageNode.Backend.DIRECTORY


class SiteNoteForm(BootstrapMixin, forms.Form):
    """Parses the note; its emptiness and length are the service's to judge (one message, one place)."""

    text = forms.CharField(
        label=_("Note for the librarians"),
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 2, "maxlength": HARVEST_NOTE_MAX_LENGTH}),
        help_text=_("Attached to every record behind this site; librarians see it on the record."),
    )


class DedupRunForm(BootstrapMixin, forms.Form):
    """What a run is started with: files of the archive (read from the storage nodes) and paths; the
    paths are checked by the service (dedup_run_start)."""

    job = forms.ModelChoiceField(
        queryset=Job.objects.all(),
        required=False,
        widget=forms.NumberInput(attrs={"min": 1}),
        label=_("The files of the job number"),
    )
    harvest_definition = forms.ModelChoiceField(
        queryset=HarvestDefinition.objects.order_by("name"),
        required=False,
        label=_("The files of the harvest definition"),
    )
    since = forms.DateField(required=False, label=_("The files closed from"))
    until = forms.DateField(required=False, label=_("to (included)"))
    inputs = forms.CharField(
        label=_("WARC/ARC files or directories"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 5, "class": "font-monospace"}),
        help_text=_(
            "One absolute path a line; directories are walked. Optional when files of the archive are "
            "chosen above (read from their storage nodes)."
        ),
    )
    out_dir = forms.CharField(
        label=_("Output directory"),
        max_length=1000,
        help_text=_("A new directory for the deduplicated files (not one of the inputs')."),
    )
    dry_run = forms.BooleanField(
        label=_("Dry run: report the duplicate rate and the savings only"), required=False
    )
    recompute_digests = forms.BooleanField(
        label=_("Recompute payload digests instead of trusting the records' own"), required=False
    )
    include_empty = forms.BooleanField(
        label=_("Also turn copies of empty payloads into revisits"), required=False
    )

    def clean_inputs(self) -> list[str]:
        lines = [line.strip() for line in self.cleaned_data["inputs"].splitlines()]
        return [line for line in lines if line]

    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            self.add_error("until", _("The period ends before it begins."))
        return data

    def archive_selection(self) -> ArchiveSelection:
        data = self.cleaned_data
        return ArchiveSelection(
            job=data["job"].pk if data.get("job") else None,
            harvest_definition=data["harvest_definition"].pk if data.get("harvest_definition") else None,
            since=data.get("since"),
            until=data.get("until"),
        )
