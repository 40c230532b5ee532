"""REST representations of the archive's files and of the storage nodes."""

from rest_framework import serializers

from storage.models import StorageNode, WarcFile
from webarchive.api.fields import CharField, ModelSerializer


class WarcFileSerializer(ModelSerializer):
    """A WARC/ARC file of the archive (read-only: files are written by crawls and imports)."""

    is_open = serializers.BooleanField(read_only=True, help_text="Still being written by a crawler.")

    class Meta:
        model = WarcFile
        fields = [
            "id",
            "name",
            "path",
            "origin",
            "size",
            "sha256",
            "records",
            "job",
            "created_at",
            "closed_at",
            "is_open",
            "recovered",
            "indexed_at",
        ]
        read_only_fields = fields


class OutsideWarcFileSerializer(serializers.Serializer):
    """A WARC file an outside crawler wrote, to register where it lies (then POST its lines to /api/cdx/)."""

    path = CharField(
        max_length=1000, help_text="Where the file is, in a directory of CDX_WRITE_ALLOWED_ROOTS."
    )
    sha256 = serializers.RegexField(
        r"^[0-9a-fA-F]{64}$", required=False, default="", help_text="The SHA-256 the file must have."
    )
    size = serializers.IntegerField(min_value=0, required=False, help_text="The size in bytes it must have.")


class StorageNodeSerializer(ModelSerializer):
    """A storage node, its measured space and what it holds (read-only: nodes change on the pages)."""

    queue = CharField(
        read_only=True, help_text="The Celery queue of its copies and audits (storage-<name> or default)."
    )
    used_percent = serializers.FloatField(
        read_only=True,
        allow_null=True,
        help_text="Space used, in percent of the capacity (null: not measured).",
    )
    replicas_ok = serializers.IntegerField(read_only=True, help_text="Replicas in state ok.")
    replicas_not_ok = serializers.IntegerField(
        read_only=True, help_text="Replicas copying, missing or corrupt."
    )
    bytes_stored = serializers.IntegerField(
        read_only=True, help_text="Sizes of the files of its ok replicas."
    )
    s3_bucket = CharField(read_only=True, help_text="S3 nodes: the bucket (empty for a directory node).")
    s3_prefix = CharField(read_only=True, help_text="S3 nodes: the keys' prefix in the bucket.")
    endpoint_url = CharField(
        read_only=True, help_text="S3 nodes: the endpoint of its credentials profile (never the keys)."
    )

    class Meta:
        model = StorageNode
        fields = [
            "id",
            "name",
            "location",
            "backend",
            "root",
            "credentials",
            "s3_bucket",
            "s3_prefix",
            "endpoint_url",
            "quota",
            "state",
            "reachable",
            "unreachable_reason",
            "capacity",
            "free",
            "used_percent",
            "measured_at",
            "local_worker",
            "queue",
            "replicas_ok",
            "replicas_not_ok",
            "bytes_stored",
            "created_at",
        ]
        read_only_fields = fields
