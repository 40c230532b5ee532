"""REST representations of the archive's files."""

from rest_framework import serializers

from storage.models import WarcFile


class WarcFileSerializer(serializers.ModelSerializer):
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
