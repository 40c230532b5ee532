"""Storage's lists as declared tables (webarchive.tables): captures, deduplication runs.

Times in these tables are UTC, as the 14-digit timestamps of the index and of replay addresses are:
the pages that draw them do so in ``{% timezone "UTC" %}``.
"""

from django.utils.translation import gettext_lazy as _

from webarchive.tables import Column, Table


class CaptureTable(Table):
    """Captures of one URL (a search's results): when, what came back, and the links to open them.

    Each capture needs its replay address (``capture.replay``, storage.views.pages.with_replay).
    """

    columns = (
        Column(
            "timestamp", _("Captured at (UTC)"), template="storage/cells/capture_time.html", css="text-nowrap"
        ),
        Column("status", _("Status"), css="capture-status"),
        Column("mime", _("MIME type"), css="small capture-mime"),
        Column("record_type", _("Record"), css="small"),
        Column("length", _("Size"), template="storage/cells/capture_size.html", align="end"),
        Column(
            "pk",
            _("Links"),
            template="storage/cells/capture_replay.html",
            css="text-nowrap",
            hidden_label=True,
        ),
    )
    empty = _("No capture.")

    def row_attrs(self, capture):
        return {"data-capture": capture.pk, "data-timestamp": capture.timestamp14}


class CaptureUrlTable(CaptureTable):
    """Captures of many URLs (a job's, a domain's, a file's): the same, with the URL first."""

    columns = (Column("url", _("URL"), css="small text-break"), *CaptureTable.columns)


class DedupRunTable(Table):
    id = "dedup-runs"
    columns = (
        Column("pk", _("Run"), template="storage/cells/dedup_run.html"),
        Column("state", _("State"), template="storage/cells/dedup_state.html"),
        Column("stage", _("Stage"), template="storage/cells/dedup_stage.html"),
        Column("inputs", _("Input files"), template="storage/cells/dedup_inputs.html", align="end"),
        Column("out_dir", _("Output directory"), css="font-monospace small text-break"),
        Column("summary", _("Duplicates"), template="storage/cells/dedup_duplicates.html", align="end"),
        Column("created_by", _("Started by"), template="storage/cells/dedup_started_by.html"),
        Column("created_at", _("Created at"), template="storage/cells/dedup_created_at.html"),
    )
    empty = _("No run yet.")


class StorageNodeTable(Table):
    """The storage nodes: state, reachability, capacity and what they hold (nodes_with_counts)."""

    id = "storage-nodes"
    empty = _("No storage node yet: the files stay where they were written until one is added.")
    columns = (
        Column("name", _("Name"), template="storage/cells/node_name.html"),
        Column("location", _("Location")),
        Column("backend", _("Backend")),
        Column("root", _("Root"), css="font-monospace small text-break"),
        Column("state", _("State"), template="storage/cells/node_state.html"),
        Column("reachable", _("Reachable"), template="storage/cells/node_reachable.html"),
        Column("capacity", _("Capacity"), template="storage/cells/node_capacity.html"),
        Column("replicas_ok", _("Replicas ok"), align="end", css="replicas-ok"),
        Column("replicas_not_ok", _("Not ok"), template="storage/cells/node_not_ok.html", align="end"),
        Column("bytes_stored", _("Stored"), template="storage/cells/node_stored.html", align="end"),
    )

    def row_attrs(self, obj) -> dict:
        return {"id": f"node-{obj.name}"}
