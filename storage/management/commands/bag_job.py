"""``manage.py bag_job JOB_ID --to DIR``: the BagIt package of a job for a preservation system."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from storage.services.bags import job_bag_write


class Command(BaseCommand):
    requires_system_checks = []  # a batch tool
    help = (
        "Write the BagIt package of an ended job whose WARC files are all ingested: its WARC files, read "
        "from replicas that pass their checksum, and its metadata (data/job.json), with SHA-256 and "
        "SHA-512 manifests, checked with bagit before it is given its name. DIR must not exist or be an "
        "empty directory; nothing is written when the job or a replica is refused."
    )

    def add_arguments(self, parser):
        parser.add_argument("job_id", type=int, metavar="JOB_ID", help="The job to bag.")
        parser.add_argument(
            "--to", required=True, metavar="DIR", help="The bag's directory (absent, or an empty directory)."
        )

    def handle(self, *args, job_id, to, **options):
        try:
            bag = job_bag_write(job_id=job_id, target=to)
        except ValidationError as error:
            raise CommandError("\n".join(error.messages)) from error
        except OSError as error:
            raise CommandError(f"The bag of job {job_id} could not be written in {to}: {error}") from error
        self.stdout.write(
            f"Job {bag.job_id} bagged in {bag.path}: {bag.warc_files} WARC files and data/job.json, "
            f"Payload-Oxum {bag.oxum}, validated with bagit."
        )
