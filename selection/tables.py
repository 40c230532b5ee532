"""The selection's lists as declared tables (webarchive.tables): collections, records, validation."""

from dataclasses import replace

from django.utils.translation import gettext_lazy as _

from webarchive.permissions import CHANGE
from webarchive.tables import Column, Table

# A record's checkbox, for the decision or the bulk edit its list's form posts ("records").
SELECT = Column("pk", _("Select"), template="selection/cells/select.html", hidden_label=True)
# The URL as people read it (an IDN host in Unicode), the stored punycode beside it.
URL = Column("url", template="selection/cells/url.html", css="text-break")
SETTINGS = (Column("budget", wide=True), Column("frequency", wide=True), Column("depth", wide=True))


class CollectionTable(Table):
    id = "collections"
    columns = (Column("name", link=True), Column("kind"), Column("is_active"))


class RecordTable(Table):
    """The record list; whoever may change records ticks them for a bulk edit."""

    id = "records"
    columns = (
        replace(SELECT, action=CHANGE),
        URL,
        Column("collection"),
        Column("responsible", wide=True),
        *SETTINGS,
        Column("status"),
        Column("is_active", wide=True),
    )
    empty = _("No record matches.")


class ValidationQueueTable(Table):
    """Proposed records, ticked to be validated or rejected together (the page is the curators')."""

    id = "validation-queue"
    columns = (SELECT, URL, Column("collection"), Column("responsible"), *SETTINGS, Column("check_status"))
    empty = _("Nothing awaits validation.")
