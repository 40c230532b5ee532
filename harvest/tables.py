"""The harvest app's lists, one declared table each, drawn by ``templates/webarchive/table.html``.

A cell that needs more than the object's value (a badge, a link that depends on the user, a word
instead of a number) is a template fragment in ``templates/harvest/cells/``, given ``obj`` and ``value``.
"""

from django.utils.translation import gettext_lazy as _

from webarchive.permissions import DELETE
from webarchive.tables import Column, Table

MINUTES = "Y-m-d H:i"  # where lists show a time, seconds do not matter


class DomainTable(Table):
    id = "domains"
    columns = (
        Column("name", link=True),
        Column("alias_of"),
        Column("is_active"),
        Column("updated_at"),
    )


class TemplateTable(Table):
    id = "template-table"
    columns = (
        Column("name", link=True),
        Column("depth_policy"),
        Column("obey_robots"),
        Column("dedup"),
        Column("render"),
        Column("version"),
        Column("is_active"),
        # Annotated by the view; links to the bulk change of budget of those configurations.
        Column(
            "configuration_count", _("Configurations"), template="harvest/cells/template_configurations.html"
        ),
    )


class TrapListTable(Table):
    id = "trap-lists"
    columns = (Column("name", link=True), Column("is_active"), Column("description"))


class ScheduleTable(Table):
    id = "schedules"
    columns = (
        Column("name", link=True),
        Column("every"),
        Column("unit"),
        Column("start"),
        Column("end_kind"),
    )


class ChannelTable(Table):
    id = "channels"
    empty = _("No channel yet.")
    columns = (
        # A channel has no page of its own: its name opens the edit form, for those who may change it.
        Column("name", template="harvest/cells/channel_name.html"),
        Column("queue"),
        Column("is_snapshot"),
        Column("is_default"),
        Column("comments"),
    )


class DefinitionTable(Table):
    id = "definitions"
    empty = _("No harvest definition matches.")
    dim_inactive = True
    columns = (
        Column("name", _("Name"), link=True),
        Column("kind", _("Kind")),
        Column("is_active", _("Active")),
        Column("channel", _("Channel")),
        Column("schedule", _("Schedule"), link="schedule"),
        Column("next_date", _("Next run"), template="harvest/cells/definition_next_run.html"),
        Column(
            "configuration_count",
            _("Configurations"),
            template="harvest/cells/definition_configurations.html",
        ),
        Column("last_run", _("Last run"), time_format=MINUTES),
    )


class JobTable(Table):
    id = "jobs"
    empty = _("No job matches.")
    columns = (
        Column("pk", _("Job"), template="harvest/cells/job.html"),
        Column("status", _("Status"), template="harvest/cells/job_status.html"),
        Column("harvest_definition", _("Harvest definition"), link="harvest_definition", css="text-break"),
        Column("run_number", _("Run"), template="harvest/cells/run_number.html"),
        Column("channel", _("Channel"), wide=True),
        Column("domain_count", _("Domains"), wide=True),
        Column("expected_objects", _("Expected objects"), wide=True),
        Column("created_at", _("Created"), time_format=MINUTES, wide=True),
        Column("submitted_at", _("Submitted"), time_format=MINUTES, wide=True),
        Column("started_at", _("Started"), time_format=MINUTES, wide=True),
        Column("ended_at", _("Ended"), time_format=MINUTES, wide=True),
    )


class CollectionMappingTable(Table):
    """(collection, frequency) → harvest definition; the withdraw buttons for those who may delete."""

    id = "collection-mapping-table"
    empty = _("No collection is mapped yet: the transfer has nowhere to put records.")
    columns = (
        Column("collection", _("Collection")),
        Column("frequency", _("Frequency")),
        Column(
            "harvest_definition",
            _("Harvest definition"),
            template="harvest/cells/mapping_definition.html",
        ),
        Column(
            "pk",
            _("Actions"),
            hidden_label=True,
            align="end",
            action=DELETE,
            template="harvest/cells/mapping_withdraw.html",
        ),
    )


class TransferReportTable(Table):
    """Transfer reports (the transfer page, a harvest definition's page)."""

    empty = _("No transfer yet.")
    columns = (
        Column("created_at", _("Run at"), link=True),
        Column("collection", _("Collection")),
        Column("harvest_definition", _("For the harvest definition")),
        Column("user", _("Run by"), template="harvest/cells/transfer_user.html"),
        Column("created", _("Created")),
        Column("updated", _("Updated")),
        Column("unchanged", _("Unchanged")),
        Column("detached", _("Detached")),
        Column("skipped", _("Skipped")),
    )


class PreloadRunTable(Table):
    """Broad-crawl preparations (the preload list)."""

    id = "preload-runs"
    empty = _("No preparation yet.")
    columns = (
        Column("id", link=True),
        Column("harvest_definition"),
        Column("state"),
        Column("stage"),
        Column("created_at"),
        Column("ended_at"),
    )
