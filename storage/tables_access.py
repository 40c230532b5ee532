"""The tables of the curators' access pages (drawn by templates/webarchive/table.html)."""

from django.utils.translation import gettext_lazy as _

from webarchive.tables import Column, Table


class AccessRuleTable(Table):
    id = "access-rules"
    empty = _("No access rule yet: every capture is for staff only.")
    columns = (
        Column("target", _("For"), template="storage/cells/access_rule_target.html"),
        Column("summary", _("Access"), link=True),
        Column("embargo_until"),
        Column("note"),
        Column("updated_at", time_format="Y-m-d H:i"),
    )


class ExclusionTable(Table):
    id = "exclusions"
    empty = _("No exclusion.")
    columns = (
        Column("target", _("Excluded"), template="storage/cells/exclusion_target.html"),
        Column("reason"),
        Column("requested_by"),
        Column("requested_on"),
        Column("ends_on"),
        Column("created_by"),
        Column("state", _("State")),
    )
