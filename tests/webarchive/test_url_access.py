"""The role rules hold on every URL the project has.

``ACCESS`` says, for each named URL, who may open it. ``test_every_url_is_listed``
fails when a URL is added without an entry here, so no page or endpoint can
slip in without its access being tested.
"""

import uuid
from pathlib import Path

import pytest
from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from selection.models import CompatibilityRule
from tests.access import assert_api_access, assert_page_access, assert_sent_to_login, user_for
from tests.factories import CollectionFactory, RecordFactory, SavedSearchFactory, ThemeFactory
from tests.harvest import discovery
from webarchive.permissions import AREA_ROLES, Area, Role

ANY_LOGGED_IN = frozenset({*Role, None})  # with or without a role
PLANNERS = AREA_ROLES[Area.PLANNING]
ENGINEERS = frozenset({Role.ENGINEER})
REPORTS = AREA_ROLES[Area.REPORTS]
SELECTION = AREA_ROLES[Area.SELECTION]
WRITERS = frozenset({Role.LIBRARIAN, Role.CURATOR})  # may propose and edit records (in their collections)
CURATORS = frozenset({Role.CURATOR})
ARCHIVE_READERS = AREA_ROLES[Area.ACCESS]
STAFF = ARCHIVE_READERS - {Role.READER}  # the Access pages of files, jobs and domains
DOWNLOADERS = ENGINEERS  # WARC bytes and raw records
# The readers' pages (kind "reading"): the status for an anonymous visitor (when the site allows
# anonymous reading; otherwise the login page), a reader, staff and a user without a role.
READ_ALL = {"anonymous": 200, "reader": 200, "staff": 200, "none": 403}
READ_CLOSED = {"anonymous": 404, "reader": 404, "staff": 200, "none": 403}  # what no rule covers
REPLAY_CLOSED = {"anonymous": 302, "reader": 403, "staff": 302, "none": 403}
# A fresh user of each role is a member of no collection: on a record's own
# pages only curators (who write everywhere) may change it. Members are tested
# in tests/selection/test_pages.py.


def collection_url(name):
    return lambda: reverse(name, kwargs={"pk": CollectionFactory().pk})


def record_url(name):
    return lambda: reverse(name, kwargs={"pk": RecordFactory().pk})


def rule_url(name):
    return lambda: reverse(name, kwargs={"pk": CompatibilityRule.objects.first().pk})


def saved_search_url(name):
    return lambda: reverse(name, kwargs={"pk": SavedSearchFactory().pk})


def url(name):
    return lambda: reverse(name)


def planning_url(name, build, kwarg="pk"):
    """A URL of one planning object, made fresh (through the services) for each check."""
    return lambda: reverse(name, kwargs={kwarg: build().pk})


def new_domain():
    from harvest.services.domains import domain_create

    return domain_create(name=f"d{uuid.uuid4().hex[:10]}.fr")


def new_seed_list():
    from harvest.services.domains import seed_list_save

    domain = new_domain()
    return seed_list_save(domain=domain, name="extra", seeds=f"http://{domain.name}/extra")


def new_configuration():
    return new_domain().default_configuration


def new_template():
    from harvest.services.planning import template_save

    return template_save(name=f"t-{uuid.uuid4().hex[:8]}")


def new_trap_list():
    from harvest.services.planning import trap_list_save

    return trap_list_save(name=f"traps-{uuid.uuid4().hex[:8]}", traps="/calendar/")


def new_schedule():
    from harvest.services.planning import schedule_save

    return schedule_save(name=f"s-{uuid.uuid4().hex[:8]}")


def new_channel():
    from harvest.models import HarvestChannel

    return HarvestChannel.objects.first()


def new_definition():
    from harvest.services.planning import definition_save

    return definition_save(kind="selective", name=f"hd-{uuid.uuid4().hex[:8]}", schedule=new_schedule())


def new_collection_mapping():
    from harvest.services.planning import collection_mapping_save

    return collection_mapping_save(
        collection=CollectionFactory(), frequency="weekly", harvest_definition=new_definition()
    )


def new_budget_mapping():
    from harvest.models import BudgetMapping

    return BudgetMapping.objects.first()


def new_transfer_report():
    from harvest.services.transfer import transfer_collection

    return transfer_collection(collection=CollectionFactory())


def new_job():
    from harvest.services.launcher import definition_launch
    from harvest.services.planning import definition_configurations_change, definition_run_now

    definition = new_definition()
    definition_configurations_change(definition=definition, add=[new_configuration()])
    definition_run_now(definition=definition)
    return definition_launch(definition_id=definition.pk).jobs.get()


def new_job_statistics():
    """An ended job's statistics (the job ended by hand: no crawler runs)."""
    from django.utils import timezone

    from harvest.models import Job
    from harvest.services.statistics import job_statistics_compute

    job = new_job()
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now(), ended_at=timezone.now())
    return job_statistics_compute(job_id=job.pk)


def new_preload_run():
    """A preparation of a snapshot from one list (not run)."""
    import tempfile

    from harvest.services.preload import SourceSpec, preload_create

    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as stream:
        stream.write("example.fr\n")
    snapshot = definition_save_snapshot()
    return preload_create(harvest_definition=snapshot, sources=[SourceSpec("registry", stream.name)])


def definition_save_snapshot():
    from harvest.services.planning import definition_save

    return definition_save(kind="snapshot", name=f"snapshot-{uuid.uuid4().hex[:8]}")


def new_site_note_url():
    job = new_job()
    entry = job.configurations.get()
    return reverse("quality:job_quality_note", kwargs={"pk": job.pk, "entry_pk": entry.pk})


def new_harvest_info():
    from harvest.services.jobs import harvest_info_record

    job = new_job()
    return harvest_info_record(
        job=job,
        configuration=job.configurations.get().configuration,
        object_count=1,
        byte_count=1,
        stop_reason="completed",
    )


def new_warc_file():
    from django.utils import timezone

    from storage.models import WarcFile

    return WarcFile.objects.create(
        name=f"imported-{uuid.uuid4().hex[:10]}.warc.gz", path="/nowhere", created_at=timezone.now()
    )


def new_storage_node():
    from storage.models import StorageNode

    name = f"node-{uuid.uuid4().hex[:10]}"
    return StorageNode.objects.create(name=name, location="here", root=f"/nowhere/{name}")


def new_warc_file_on_disk():
    from django.conf import settings
    from django.utils import timezone

    from storage.models import WarcFile

    directory = Path(settings.HARVEST_WARC_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"imported-{uuid.uuid4().hex[:10]}.warc.gz"
    path.write_bytes(b"WARC/1.1\r\n")
    return WarcFile.objects.create(
        name=path.name, path=str(path), created_at=timezone.now(), closed_at=timezone.now()
    )


def new_capture():
    """A capture whose record is on disk (the raw page reads it)."""
    import io

    from django.conf import settings
    from warcio.warcwriter import WARCWriter

    from storage.services.indexing import warc_file_index

    directory = Path(settings.HARVEST_WARC_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"access-{uuid.uuid4().hex[:10]}.warc.gz"
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        writer.write_record(
            writer.create_warc_record(
                "http://example.com/",
                "resource",
                payload=io.BytesIO(b"hello"),
                warc_content_type="text/plain",
            )
        )
    return warc_file_index(path=path).warc_file.captures.get()


def new_access_rule():
    from storage.services.access import access_rule_save

    return access_rule_save(collection=CollectionFactory(), level="readers")


def new_exclusion():
    from storage.services.access import exclusion_create

    return exclusion_create(
        kind="url", target="http://example.com/a", reason="a complaint", requested_by="someone"
    )


def new_screenshot():
    """A screenshot of a rendered page, as the crawler writes it into a job's WARC file (indexed)."""
    from tests.harvest.screenshots import screenshot, write_renders

    return write_renders(new_job(), [screenshot("http://example.com/")]).captures.get()


def new_dedup_run():
    from storage.models import DedupRun

    return DedupRun.objects.create(
        out_dir=f"/nowhere/dedup-{uuid.uuid4().hex[:10]}", inputs=["/nowhere/a.warc.gz"]
    )


# name -> (kind, url builder, who may use it). Kinds: "page" (GET), "post" (a
# form's target), "api" (GET), "api-post", "public", "public-post", "sso", "own" (POST on
# the user's own object: anyone else gets 404).
ACCESS = {
    # Readers have no home of their own: they are sent to the reading room (see test_page_access).
    "home": ("page", url("home"), ANY_LOGGED_IN - {Role.READER}),
    "account": ("page", url("account"), ANY_LOGGED_IN),
    "account-token": ("post", url("account-token"), ANY_LOGGED_IN),
    "logout": ("post", url("logout"), ANY_LOGGED_IN),
    "set_language": ("post", url("set_language"), ANY_LOGGED_IN),
    "login": ("public", url("login"), None),
    # The language switch, for visitors too (tests/webarchive/test_language.py).
    "language": ("public-post", url("language"), None),
    # Single sign-on, for people who are not logged in yet, when it is configured: the provider's
    # round trip (kind "sso", tested in tests/webarchive/test_oidc.py; 404 without configuration).
    "oidc_authentication_init": ("sso", url("oidc_authentication_init"), None),
    "oidc_authentication_callback": ("sso", url("oidc_authentication_callback"), None),
    "selection:collection_list": ("page", url("selection:collection_list"), SELECTION),
    "selection:collection_create": ("page", url("selection:collection_create"), CURATORS),
    "selection:collection_detail": ("page", collection_url("selection:collection_detail"), SELECTION),
    "selection:collection_edit": ("page", collection_url("selection:collection_edit"), CURATORS),
    "selection:theme_create": ("page", collection_url("selection:theme_create"), CURATORS),
    "selection:record_list": ("page", url("selection:record_list"), SELECTION),
    "selection:record_propose": ("page", url("selection:record_propose"), WRITERS),
    "selection:record_bulk_edit": ("post", url("selection:record_bulk_edit"), WRITERS),
    "selection:record_detail": ("page", record_url("selection:record_detail"), SELECTION),
    "selection:record_edit": ("page", record_url("selection:record_edit"), CURATORS),
    "selection:record_status": ("page", record_url("selection:record_status"), CURATORS),
    "selection:record_transfer": ("page", record_url("selection:record_transfer"), CURATORS),
    "selection:record_export": ("page", url("selection:record_export"), SELECTION),
    "selection:record_import": ("page", url("selection:record_import"), WRITERS),
    "selection:record_import_commit": ("post", url("selection:record_import_commit"), WRITERS),
    "selection:validation_queue": ("page", url("selection:validation_queue"), CURATORS),
    "selection:validation_decide": ("post", url("selection:validation_decide"), CURATORS),
    "selection:saved_search_create": ("post", url("selection:saved_search_create"), SELECTION),
    "selection:saved_search_delete": ("own", saved_search_url("selection:saved_search_delete"), SELECTION),
    "selection:compatibility": ("page", url("selection:compatibility"), SELECTION),
    "selection:compatibility_rule_delete": (
        "post",
        rule_url("selection:compatibility_rule_delete"),
        CURATORS,
    ),
    "api-docs": ("page", url("api-docs"), ANY_LOGGED_IN),
    "api-schema": ("api", url("api-schema"), ANY_LOGGED_IN),
    "api:api-root": ("api", url("api:api-root"), ANY_LOGGED_IN),
    "api:token": ("public-post", url("api:token"), None),
    "api:collection-list": ("api", url("api:collection-list"), SELECTION),
    "api:collection-detail": ("api", collection_url("api:collection-detail"), SELECTION),
    "api:record-list": ("api", url("api:record-list"), SELECTION),
    "api:record-detail": ("api", record_url("api:record-detail"), SELECTION),
    "api:record-check-url": ("api-post", url("api:record-check-url"), WRITERS),
    # Who may validate or transfer is the service's decision (tests/selection/test_api.py).
    "api:record-set-status": ("api-post", record_url("api:record-set-status"), WRITERS),
    "api:record-transfer": ("api-post", record_url("api:record-transfer"), WRITERS),
    "api:theme-list": ("api", url("api:theme-list"), SELECTION),
    "api:theme-detail": (
        "api",
        lambda: reverse("api:theme-detail", kwargs={"pk": ThemeFactory().pk}),
        SELECTION,
    ),
    "api:compatibilityrule-list": ("api", url("api:compatibilityrule-list"), SELECTION),
    "api:compatibilityrule-detail": ("api", rule_url("api:compatibilityrule-detail"), SELECTION),
    # Planning: domains, seed lists, configurations, templates, global traps
    "harvest:domain_list": ("page", url("harvest:domain_list"), PLANNERS),
    "harvest:domain_create": ("page", url("harvest:domain_create"), PLANNERS),
    "harvest:domain_bulk_create": ("page", url("harvest:domain_bulk_create"), PLANNERS),
    "harvest:domain_detail": ("page", planning_url("harvest:domain_detail", new_domain), PLANNERS),
    "harvest:domain_edit": ("page", planning_url("harvest:domain_edit", new_domain), PLANNERS),
    "harvest:domain_alias": ("page", planning_url("harvest:domain_alias", new_domain), PLANNERS),
    "harvest:domain_alias_renew": ("post", planning_url("harvest:domain_alias_renew", new_domain), PLANNERS),
    "harvest:seedlist_create": (
        "page",
        planning_url("harvest:seedlist_create", new_domain, "domain_pk"),
        PLANNERS,
    ),
    "harvest:seedlist_edit": ("page", planning_url("harvest:seedlist_edit", new_seed_list), PLANNERS),
    "harvest:seedlist_delete": ("post", planning_url("harvest:seedlist_delete", new_seed_list), PLANNERS),
    "harvest:configuration_create": (
        "page",
        planning_url("harvest:configuration_create", new_domain, "domain_pk"),
        PLANNERS,
    ),
    "harvest:configuration_detail": (
        "page",
        planning_url("harvest:configuration_detail", new_configuration),
        PLANNERS,
    ),
    "harvest:configuration_edit": (
        "page",
        planning_url("harvest:configuration_edit", new_configuration),
        PLANNERS,
    ),
    "harvest:configuration_delete": (
        "post",
        planning_url("harvest:configuration_delete", new_configuration),
        PLANNERS,
    ),
    "harvest:configuration_bulk_limits": ("page", url("harvest:configuration_bulk_limits"), PLANNERS),
    "harvest:template_list": ("page", url("harvest:template_list"), PLANNERS),
    "harvest:template_create": ("page", url("harvest:template_create"), PLANNERS),
    "harvest:template_detail": ("page", planning_url("harvest:template_detail", new_template), PLANNERS),
    "harvest:template_edit": ("page", planning_url("harvest:template_edit", new_template), PLANNERS),
    "harvest:trap_list_list": ("page", url("harvest:trap_list_list"), PLANNERS),
    "harvest:trap_list_create": ("page", url("harvest:trap_list_create"), PLANNERS),
    "harvest:trap_list_detail": ("page", planning_url("harvest:trap_list_detail", new_trap_list), PLANNERS),
    "harvest:trap_list_edit": ("page", planning_url("harvest:trap_list_edit", new_trap_list), PLANNERS),
    # Planning: definitions, schedules, channels, mappings, transfer, jobs
    "harvest:definition_list": ("page", url("harvest:definition_list"), PLANNERS),
    "harvest:definition_create_selective": ("page", url("harvest:definition_create_selective"), PLANNERS),
    "harvest:definition_create_snapshot": ("page", url("harvest:definition_create_snapshot"), PLANNERS),
    "harvest:definition_detail": (
        "page",
        planning_url("harvest:definition_detail", new_definition),
        PLANNERS,
    ),
    "harvest:definition_edit": ("page", planning_url("harvest:definition_edit", new_definition), PLANNERS),
    "harvest:definition_activate": (
        "post",
        planning_url("harvest:definition_activate", new_definition),
        PLANNERS,
    ),
    "harvest:definition_run_now": (
        "post",
        planning_url("harvest:definition_run_now", new_definition),
        PLANNERS,
    ),
    "harvest:definition_configurations": (
        "page",
        planning_url("harvest:definition_configurations", new_definition),
        PLANNERS,
    ),
    "harvest:schedule_list": ("page", url("harvest:schedule_list"), PLANNERS),
    "harvest:schedule_create": ("page", url("harvest:schedule_create"), PLANNERS),
    "harvest:schedule_detail": ("page", planning_url("harvest:schedule_detail", new_schedule), PLANNERS),
    "harvest:schedule_edit": ("page", planning_url("harvest:schedule_edit", new_schedule), PLANNERS),
    "harvest:channel_list": ("page", url("harvest:channel_list"), PLANNERS),
    "harvest:channel_create": ("page", url("harvest:channel_create"), PLANNERS),
    "harvest:channel_edit": ("page", planning_url("harvest:channel_edit", new_channel), PLANNERS),
    "harvest:mapping_list": ("page", url("harvest:mapping_list"), PLANNERS),
    "harvest:collection_mapping_create": ("page", url("harvest:collection_mapping_create"), PLANNERS),
    "harvest:collection_mapping_delete": (
        "post",
        planning_url("harvest:collection_mapping_delete", new_collection_mapping),
        PLANNERS,
    ),
    "harvest:budget_mapping_create": ("page", url("harvest:budget_mapping_create"), PLANNERS),
    "harvest:budget_mapping_edit": (
        "page",
        planning_url("harvest:budget_mapping_edit", new_budget_mapping),
        PLANNERS,
    ),
    "harvest:budget_mapping_delete": (
        "post",
        planning_url("harvest:budget_mapping_delete", new_budget_mapping),
        PLANNERS,
    ),
    "harvest:transfer": ("page", url("harvest:transfer"), PLANNERS),
    "harvest:transfer_detail": (
        "page",
        planning_url("harvest:transfer_detail", new_transfer_report),
        PLANNERS,
    ),
    "harvest:job_list": ("page", url("harvest:job_list"), PLANNERS),
    "harvest:job_detail": ("page", planning_url("harvest:job_detail", new_job), PLANNERS),
    "harvest:job_resubmit": ("post", planning_url("harvest:job_resubmit", new_job), ENGINEERS),
    "harvest:job_running": ("page", url("harvest:job_running"), PLANNERS),
    "harvest:monitoring": ("page", url("harvest:monitoring"), ENGINEERS),
    "harvest:job_stop": ("post", planning_url("harvest:job_stop", new_job), ENGINEERS),
    # Steering a running job (harvest.views.steering): engineers only.
    "harvest:discovery_index": ("page", url("harvest:discovery_index"), PLANNERS),
    "harvest:discovery_blacklist": ("page", url("harvest:discovery_blacklist"), PLANNERS),
    "harvest:discovery_block_remove": (
        "post",
        planning_url("harvest:discovery_block_remove", discovery.block),
        CURATORS,
    ),
    "harvest:discovery_queue": ("page", collection_url("harvest:discovery_queue"), PLANNERS),
    "harvest:discovery_action": ("post", lambda: discovery.action_url("dismiss"), CURATORS),
    "harvest:discovery_undo": ("post", planning_url("harvest:discovery_undo", discovery.dismissal), CURATORS),
    "harvest:job_pause": ("post", planning_url("harvest:job_pause", new_job), ENGINEERS),
    "harvest:job_resume": ("post", planning_url("harvest:job_resume", new_job), ENGINEERS),
    "harvest:job_rule_add": ("post", planning_url("harvest:job_rule_add", new_job), ENGINEERS),
    "harvest:job_site_pause": ("post", planning_url("harvest:job_site_pause", new_job), ENGINEERS),
    "harvest:job_site_resume": ("post", planning_url("harvest:job_site_resume", new_job), ENGINEERS),
    "harvest:job_site_budget": ("post", planning_url("harvest:job_site_budget", new_job), ENGINEERS),
    # The quality view of a job (Reports): curators write notes on its sites, which go to the records.
    "quality:job_quality": ("page", planning_url("quality:job_quality", new_job), REPORTS),
    "quality:job_quality_note": ("post", lambda: new_site_note_url(), CURATORS),
    # URLs missed in replay (Reports): read with the jobs; curators add them to the next run.
    "quality:definition_misses": ("page", planning_url("quality:definition_misses", new_definition), REPORTS),
    "quality:definition_misses_add": (
        "post",
        planning_url("quality:definition_misses_add", new_definition),
        CURATORS,
    ),
    # Broad-crawl preparation (Operations): crawl engineers only.
    "harvest:preload_list": ("page", url("harvest:preload_list"), ENGINEERS),
    "harvest:preload_start": ("page", url("harvest:preload_start"), ENGINEERS),
    "harvest:preload_detail": ("page", planning_url("harvest:preload_detail", new_preload_run), ENGINEERS),
    "harvest:preload_statistics": (
        "page",
        planning_url("harvest:preload_statistics", new_preload_run),
        ENGINEERS,
    ),
    "harvest:preload_invalid_lines": (
        "page",
        planning_url("harvest:preload_invalid_lines", new_preload_run),
        ENGINEERS,
    ),
    "harvest:preload_stop": ("post", planning_url("harvest:preload_stop", new_preload_run), ENGINEERS),
    "harvest:preload_resume": ("post", planning_url("harvest:preload_resume", new_preload_run), ENGINEERS),
    # Reports: managers, curators and engineers read the statistics and take them away as CSV.
    "reports:dashboard": ("page", url("reports:dashboard"), REPORTS),
    "reports:statistics": ("page", url("reports:statistics"), REPORTS),
    "reports:compare": ("page", url("reports:compare"), REPORTS),
    "reports:year_export": ("page", lambda: reverse("reports:year_export", kwargs={"year": 2026}), REPORTS),
    "api:jobstatistics-list": ("api", url("api:jobstatistics-list"), REPORTS),
    "api:jobstatistics-detail": (
        "api",
        planning_url("api:jobstatistics-detail", new_job_statistics),
        REPORTS,
    ),
    "api:jobstatistics-totals": ("api", url("api:jobstatistics-totals"), REPORTS),
    "api:jobstatistics-table": ("api", lambda: reverse("api:jobstatistics-table") + "?table=mime", REPORTS),
    # Planning API
    "api:domain-list": ("api", url("api:domain-list"), PLANNERS),
    "api:domain-detail": ("api", planning_url("api:domain-detail", new_domain), PLANNERS),
    "api:seedlist-list": ("api", url("api:seedlist-list"), PLANNERS),
    "api:seedlist-detail": ("api", planning_url("api:seedlist-detail", new_seed_list), PLANNERS),
    "api:domainconfiguration-list": ("api", url("api:domainconfiguration-list"), PLANNERS),
    "api:domainconfiguration-detail": (
        "api",
        planning_url("api:domainconfiguration-detail", new_configuration),
        PLANNERS,
    ),
    "api:harvesttemplate-list": ("api", url("api:harvesttemplate-list"), PLANNERS),
    "api:harvesttemplate-detail": ("api", planning_url("api:harvesttemplate-detail", new_template), PLANNERS),
    "api:schedule-list": ("api", url("api:schedule-list"), PLANNERS),
    "api:schedule-detail": ("api", planning_url("api:schedule-detail", new_schedule), PLANNERS),
    "api:harvestchannel-list": ("api", url("api:harvestchannel-list"), PLANNERS),
    "api:harvestchannel-detail": ("api", planning_url("api:harvestchannel-detail", new_channel), PLANNERS),
    "api:harvestdefinition-list": ("api", url("api:harvestdefinition-list"), PLANNERS),
    "api:harvestdefinition-detail": (
        "api",
        planning_url("api:harvestdefinition-detail", new_definition),
        PLANNERS,
    ),
    "api:globalcrawlertraplist-list": ("api", url("api:globalcrawlertraplist-list"), PLANNERS),
    "api:globalcrawlertraplist-detail": (
        "api",
        planning_url("api:globalcrawlertraplist-detail", new_trap_list),
        PLANNERS,
    ),
    "api:collectionmapping-list": ("api", url("api:collectionmapping-list"), PLANNERS),
    "api:collectionmapping-detail": (
        "api",
        planning_url("api:collectionmapping-detail", new_collection_mapping),
        PLANNERS,
    ),
    "api:budgetmapping-list": ("api", url("api:budgetmapping-list"), PLANNERS),
    "api:budgetmapping-detail": (
        "api",
        planning_url("api:budgetmapping-detail", new_budget_mapping),
        PLANNERS,
    ),
    "api:transferreport-list": ("api", url("api:transferreport-list"), PLANNERS),
    "api:transferreport-detail": (
        "api",
        planning_url("api:transferreport-detail", new_transfer_report),
        PLANNERS,
    ),
    "api:crawl-feed": ("api", url("api:crawl-feed"), PLANNERS),
    "api:crawl-feed-w3act": (
        "api",
        lambda: reverse("api:crawl-feed-w3act", kwargs={"frequency": "all"}),
        PLANNERS,
    ),
    "api:job-list": ("api", url("api:job-list"), PLANNERS),
    "api:job-detail": ("api", planning_url("api:job-detail", new_job), PLANNERS),
    "api:job-configurations": ("api", planning_url("api:job-configurations", new_job), PLANNERS),
    "api:job-progress": ("api", planning_url("api:job-progress", new_job), PLANNERS),
    "api:job-sites": ("api", planning_url("api:job-sites", new_job), PLANNERS),
    "api:job-files": ("api", planning_url("api:job-files", new_job), PLANNERS),
    "api:harvestinfo-list": ("api", url("api:harvestinfo-list"), REPORTS),
    "api:harvestinfo-detail": ("api", planning_url("api:harvestinfo-detail", new_harvest_info), REPORTS),
    "api:domain-alias": ("api-post", planning_url("api:domain-alias", new_domain), PLANNERS),
    "api:domain-renew-alias": ("api-post", planning_url("api:domain-renew-alias", new_domain), PLANNERS),
    "api:domain-bulk-create": ("api-post", url("api:domain-bulk-create"), PLANNERS),
    "api:domainconfiguration-bulk-limits": ("api-post", url("api:domainconfiguration-bulk-limits"), PLANNERS),
    "api:harvestdefinition-activate": (
        "api-post",
        planning_url("api:harvestdefinition-activate", new_definition),
        PLANNERS,
    ),
    "api:harvestdefinition-deactivate": (
        "api-post",
        planning_url("api:harvestdefinition-deactivate", new_definition),
        PLANNERS,
    ),
    "api:harvestdefinition-run-now": (
        "api-post",
        planning_url("api:harvestdefinition-run-now", new_definition),
        PLANNERS,
    ),
    "api:harvestdefinition-change-configurations": (
        "api-post",
        planning_url("api:harvestdefinition-change-configurations", new_definition),
        PLANNERS,
    ),
    "api:job-resubmit": ("api-post", planning_url("api:job-resubmit", new_job), ENGINEERS),
    "api:job-stop": ("api-post", planning_url("api:job-stop", new_job), ENGINEERS),
    **{
        f"api:job-{name}": ("api-post", planning_url(f"api:job-{name}", new_job), ENGINEERS)
        for name in ("pause", "resume", "rules", "site-pause", "site-resume", "budget")
    },
    "api:warcfile-list": ("api", url("api:warcfile-list"), STAFF),
    "api:warcfile-detail": ("api", planning_url("api:warcfile-detail", new_warc_file), STAFF),
    "api:storagenode-list": ("api", url("api:storagenode-list"), ENGINEERS),
    # Full-text search: readers and staff (anonymous callers when the site allows it: test_fulltext_access).
    "api:search": ("api", lambda: reverse("api:search") + "?q=archive", ARCHIVE_READERS),
    # Outside crawlers' index lines (POST only): engineers (test_cdx_write_api).
    "api:cdx-lines": ("api-post", url("api:cdx-lines"), ENGINEERS),
    "api:warcfile-register": ("api-post", url("api:warcfile-register"), ENGINEERS),
    "api:storagenode-detail": ("api", planning_url("api:storagenode-detail", new_storage_node), ENGINEERS),
    # The readers' pages: anonymous visitors too when the site allows them (see test_reading_pages).
    "storage:search": ("reading", url("storage:search"), READ_ALL),
    # How often sites change (storage.views.change_rates): curators accept suggestions and boost.
    "storage:record_accept_suggestion": ("post", record_url("storage:record_accept_suggestion"), CURATORS),
    "storage:record_boost": ("post", record_url("storage:record_boost"), CURATORS),
    "storage:record_boost_cancel": ("post", record_url("storage:record_boost_cancel"), CURATORS),
    "storage:collection_suggestions": ("page", collection_url("storage:collection_suggestions"), CURATORS),
    "storage:text_search": ("reading", lambda: reverse("storage:text_search") + "?q=archive", READ_ALL),
    "storage:reading_room": ("reading", url("storage:reading_room"), READ_ALL),
    "storage:reading_room_collection": (
        "reading",
        lambda: reverse("storage:reading_room_collection", kwargs={"pk": CollectionFactory().pk}),
        READ_CLOSED,  # a collection without an access rule: staff only
    ),
    "storage:replay_entry": (
        "reading",
        lambda: reverse("storage:replay_entry", kwargs={"stamp": "2024", "url": new_capture().url}),
        REPLAY_CLOSED,  # an imported capture: no rule covers it, staff only
    ),
    # Curators manage who may read what.
    "storage:accessrule_list": ("page", url("storage:accessrule_list"), CURATORS),
    "storage:accessrule_create": ("page", url("storage:accessrule_create"), CURATORS),
    "storage:accessrule_detail": (
        "page",
        planning_url("storage:accessrule_detail", new_access_rule),
        CURATORS,
    ),
    "storage:accessrule_edit": ("page", planning_url("storage:accessrule_edit", new_access_rule), CURATORS),
    "storage:exclusion_list": ("page", url("storage:exclusion_list"), CURATORS),
    "storage:exclusion_create": ("page", url("storage:exclusion_create"), CURATORS),
    "storage:exclusion_detail": ("page", planning_url("storage:exclusion_detail", new_exclusion), CURATORS),
    "storage:exclusion_edit": ("page", planning_url("storage:exclusion_edit", new_exclusion), CURATORS),
    "storage:exclusion_lift": ("post", planning_url("storage:exclusion_lift", new_exclusion), CURATORS),
    # Machine endpoints of the replay process: 401 (not a login page) without credentials.
    "cdx": ("api", lambda: reverse("cdx") + "?url=example.com", ARCHIVE_READERS),
    # The replay gate's reports of missed URLs: signed with the gate's key, not a user's (403 unsigned).
    "replay_misses": ("public-post", url("replay_misses"), None),
    "warc_bytes": (
        "api",
        lambda: reverse("warc_bytes", kwargs={"filename": new_warc_file_on_disk().name}),
        DOWNLOADERS,
    ),
    "storage:capture_detail": ("reading", planning_url("storage:capture_detail", new_capture), READ_CLOSED),
    "storage:capture_raw": ("page", planning_url("storage:capture_raw", new_capture), DOWNLOADERS),
    "storage:capture_image": ("page", planning_url("storage:capture_image", new_screenshot), STAFF),
    "storage:warcfile_detail": (
        "page",
        planning_url("storage:warcfile_detail", new_warc_file),
        STAFF,
    ),
    "storage:job_captures": ("page", planning_url("storage:job_captures", new_job), STAFF),
    # A job's WACZ package: asked for by POST (the download, a GET, is a file once made).
    "storage:job_wacz": ("post", planning_url("storage:job_wacz", new_job), DOWNLOADERS),
    "storage:domain_captures": (
        "page",
        lambda: reverse("storage:domain_captures", kwargs={"name": "example.com"}),
        STAFF,
    ),
    # Deduplication (Operations): crawl engineers only.
    "storage:dedup_list": ("page", url("storage:dedup_list"), ENGINEERS),
    "storage:dedup_start": ("page", url("storage:dedup_start"), ENGINEERS),
    "storage:dedup_detail": ("page", planning_url("storage:dedup_detail", new_dedup_run), ENGINEERS),
    "storage:dedup_stop": ("post", planning_url("storage:dedup_stop", new_dedup_run), ENGINEERS),
    "storage:dedup_resume": ("post", planning_url("storage:dedup_resume", new_dedup_run), ENGINEERS),
    "storage:warcfile_retire": ("post", planning_url("storage:warcfile_retire", new_warc_file), ENGINEERS),
    # Storage (Operations): crawl engineers only.
    "storage:node_list": ("page", url("storage:node_list"), ENGINEERS),
    "storage:node_add": ("page", url("storage:node_add"), ENGINEERS),
    "storage:node_detail": ("page", planning_url("storage:node_detail", new_storage_node), ENGINEERS),
    "storage:node_offline": ("post", planning_url("storage:node_offline", new_storage_node), ENGINEERS),
    "storage:node_online": ("post", planning_url("storage:node_online", new_storage_node), ENGINEERS),
    "storage:node_drain": ("post", planning_url("storage:node_drain", new_storage_node), ENGINEERS),
    "storage:node_verify": ("post", planning_url("storage:node_verify", new_storage_node), ENGINEERS),
    "storage:storage_events": ("page", url("storage:storage_events"), ENGINEERS),
    "storage:storage_alerts": ("page", url("storage:storage_alerts"), ENGINEERS),
    "storage:storage_statistics": ("page", url("storage:storage_statistics"), ENGINEERS),
    "storage:warcfile_verify": ("post", planning_url("storage:warcfile_verify", new_warc_file), ENGINEERS),
}
ACCESS.update(
    {f"area[{area.value}]": ("page", lambda a=area: f"/{a.value}/", AREA_ROLES[area]) for area in Area}
)
del ACCESS["area[admin]"]  # /admin/ is the Django admin, tested below


def url_names(patterns=None, namespace=""):
    """Every named URL of the project, ``namespace:name``."""
    if patterns is None:
        patterns = get_resolver().url_patterns
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from url_names(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield f"{namespace}{pattern.name}"


def test_every_url_is_listed():
    names = {name for name in url_names() if not name.startswith("admin:")}
    names = {"area[…]" if name == "area" else name for name in names}
    listed = {name for name in ACCESS if not name.startswith("area[")} | {"area[…]"}
    assert names - listed == set(), "URLs without an access rule in ACCESS"
    assert listed - names == set(), "ACCESS lists URLs that no longer exist"


def test_every_area_is_listed():
    assert {f"area[{area.value}]" for area in Area if area != Area.ADMIN} <= ACCESS.keys()


@pytest.mark.smoke
@pytest.mark.django_db
@pytest.mark.parametrize("name", [n for n, (kind, *_) in ACCESS.items() if kind == "page"])
def test_page_access(client, name):
    _kind, build, allowed = ACCESS[name]
    redirects = {Role.READER: reverse("storage:reading_room")} if name == "home" else None
    assert_page_access(client, build(), allowed, redirects=redirects)


@pytest.mark.smoke
@pytest.mark.django_db
@pytest.mark.parametrize("name", [n for n, (kind, *_) in ACCESS.items() if kind == "api"])
def test_api_access(client, name):
    _kind, build, allowed = ACCESS[name]
    assert_api_access(client, build(), allowed)


ROLES_AND_NONE = [*Role, None, "admin"]


@pytest.mark.smoke
@pytest.mark.django_db
@pytest.mark.parametrize("name", [n for n, (kind, *_) in ACCESS.items() if kind == "reading"])
def test_reading_pages(client, settings, name):
    """Readers' pages: anonymous → login, unless the site lets anonymous visitors read what is open."""
    _kind, build, expected = ACCESS[name]
    target = build()
    settings.ACCESS_ANONYMOUS = False
    assert_sent_to_login(client.get(target), target)
    settings.ACCESS_ANONYMOUS = True
    answer = client.get(target)
    assert answer.status_code == expected["anonymous"], f"{target} as anonymous: {answer.status_code}"
    if answer.status_code == 302:
        assert_sent_to_login(answer, target)  # never sent on to replay
    for role in ROLES_AND_NONE:
        client.force_login(user_for(role))
        kind = "none" if role is None else "reader" if role == Role.READER else "staff"
        status = client.get(target).status_code
        assert status == expected[kind], (
            f"{target} as {role or 'no role'}: got {status}, expected {expected[kind]}"
        )
        client.logout()


def expected_allowed(role, allowed) -> bool:
    return role == "admin" or role in allowed


def assert_posts_by_role(client, target, allowed, post, *, refused=(403, 500)):
    """POST as each role: those allowed are not refused (nor a 500), the others get 403."""
    for role in ROLES_AND_NONE:
        client.force_login(user_for(role))
        status = post(target).status_code
        if expected_allowed(role, allowed):
            assert status not in refused, f"{target} as {role or 'no role'}: {status}"
        else:
            assert status == 403, f"{target} as {role or 'no role'}: {status}, expected 403"
        client.logout()


@pytest.mark.django_db
@pytest.mark.parametrize("name", [n for n, (kind, *_) in ACCESS.items() if kind == "post"])
def test_form_targets(client, name):
    """Anonymous → login; a role that may not → 403; one that may → the form is handled (no 403, no 500)."""
    _kind, build, allowed = ACCESS[name]
    target = build()
    assert_sent_to_login(client.post(target), target)
    assert_posts_by_role(client, target, allowed, client.post)


@pytest.mark.django_db
@pytest.mark.parametrize("name", [n for n, (kind, *_) in ACCESS.items() if kind == "api-post"])
def test_api_actions(client, name):
    _kind, build, allowed = ACCESS[name]
    target = build()

    def post(url):
        return client.post(url, {}, content_type="application/json")

    assert post(target).status_code == 401
    assert_posts_by_role(client, target, allowed, post, refused=(401, 403, 500))


@pytest.mark.django_db
@pytest.mark.parametrize("name", [n for n, (kind, *_) in ACCESS.items() if kind == "own"])
def test_own_objects(client, name):
    """Only the owner may act on their object; others with a role get 404, no role 403."""
    _kind, build, allowed = ACCESS[name]
    target = build()
    assert_sent_to_login(client.post(target), target)
    for role in ROLES_AND_NONE:
        client.force_login(user_for(role))
        status = client.post(target).status_code
        assert status == (404 if expected_allowed(role, allowed) else 403), f"{target} as {role}: {status}"
        client.logout()


@pytest.mark.django_db
def test_login_page_is_public(client):
    assert client.get(reverse("login")).status_code == 200


@pytest.mark.django_db
def test_token_endpoint_needs_credentials_not_a_session(client):
    response = client.post(reverse("api:token"), {"username": "nobody", "password": "wrong"})
    assert response.status_code == 400


def admin_urls():
    """The admin index and, for every registered model, its list, add and one change page."""
    urls = [reverse("admin:index")]
    collection = CollectionFactory()
    for model in admin.site._registry:
        info = (model._meta.app_label, model._meta.model_name)
        urls.append(reverse("admin:{}_{}_changelist".format(*info)))
        if model is type(collection):
            urls.append(reverse("admin:{}_{}_change".format(*info), args=[collection.pk]))
            urls.append(reverse("admin:{}_{}_history".format(*info), args=[collection.pk]))
    return urls


@pytest.mark.smoke
@pytest.mark.django_db
def test_admin_is_for_administrators_only(client):
    for url in admin_urls():
        assert_page_access(client, url, frozenset())
