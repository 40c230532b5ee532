"""The form of the quality view: a curator's note on one site of a job (the service validates it)."""

from django import forms
from django.utils.translation import gettext_lazy as _

from selection.models import HARVEST_NOTE_MAX_LENGTH
from webarchive.forms import BootstrapMixin


class SiteNoteForm(BootstrapMixin, forms.Form):
    """Parses the note; its emptiness and length are the service's to judge (one message, one place)."""

    text = forms.CharField(
        label=_("Note for the librarians"),
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 2, "maxlength": HARVEST_NOTE_MAX_LENGTH}),
        help_text=_("Attached to every record behind this site; librarians see it on the record."),
    )
