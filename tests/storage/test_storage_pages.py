"""The storage pages (Operations → Storage): engineers only; adding a node; a node's actions and
what they write; verifying a file's replicas; the history, the alerts and the statistics."""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from storage import selectors_storage
from storage.models import Replica, StorageEvent, StorageNode, WarcFile
from storage.services.nodes import event, node_check, node_create
from tests.access import assert_page_access, assert_sent_to_login, user_for
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db

ENGINEERS = frozenset({Role.ENGINEER})
OTHERS = [Role.LIBRARIAN, Role.CURATOR, Role.MANAGER, None]


def make_node(tmp_path: Path, name: str, *, location: str = "room-1", **options) -> StorageNode:
    return node_create(name=name, location=location, root=str(tmp_path / "nodes" / name), **options)


def make_file(name: str | None = None, *, size: int = 1000, wanted: int = 2, created_at=None, job=None):
    name = name or f"file-{uuid.uuid4().hex[:8]}.warc.gz"
    return WarcFile.objects.create(
        name=name,
        path=f"/spool/{name}",
        size=size,
        sha256=hashlib.sha256(name.encode()).hexdigest(),
        created_at=created_at or timezone.now(),
        closed_at=created_at or timezone.now(),
        replicas_wanted=wanted,
        job=job,
    )


def make_replica(warc: WarcFile, node: StorageNode, state=Replica.State.OK, **fields) -> Replica:
    return Replica.objects.create(
        warc_file=warc,
        node=node,
        relative_path=f"2025/{warc.name}",
        state=state,
        sha256=warc.sha256 if state == Replica.State.OK else "",
        size=warc.size,
        verified_at=timezone.now() if state == Replica.State.OK else None,
        **fields,
    )


def field_html(html: str, name: str) -> str:
    match = re.search(rf'<div class="mb-3" id="field-{name}">(.*?)\n</div>', html, re.S)
    assert match, f"no field {name}"
    return match.group(1)


@pytest.fixture
def sent(monkeypatch):
    """The verifications handed to Celery, as (replica id, queue), in order (the broker is not the
    subject here: the tasks' own tests send them through it)."""
    calls: list[tuple[int, str]] = []

    def apply_async(args, kwargs=None, *, queue):
        calls.append((args[0], queue))

    monkeypatch.setattr("storage.tasks.verify_replica.apply_async", apply_async)
    return calls


@pytest.fixture
def engineer(as_role):
    return as_role(Role.ENGINEER)


# Who may open them ----------------------------------------------------------------------------------


PAGES = ["storage:node_list", "storage:node_add", "storage:storage_events", "storage:storage_alerts"]
PAGES += ["storage:storage_statistics"]


@pytest.mark.parametrize("name", [*PAGES, "storage:node_detail"])
def test_pages_are_for_crawl_engineers(client, tmp_path, name):
    kwargs = {"pk": make_node(tmp_path, "n1").pk} if name == "storage:node_detail" else {}
    assert_page_access(client, reverse(name, kwargs=kwargs), ENGINEERS)


ACTIONS = ["storage:node_offline", "storage:node_online", "storage:node_drain", "storage:node_verify"]


@pytest.mark.parametrize("name", ACTIONS)
@pytest.mark.parametrize("role", OTHERS)
def test_actions_are_refused_to_other_roles_and_change_nothing(client, tmp_path, sent, name, role):
    node = make_node(tmp_path, "n1")
    make_replica(make_file(), node)
    url = reverse(name, kwargs={"pk": node.pk})
    assert_sent_to_login(client.post(url), url)
    client.force_login(user_for(role))
    assert client.post(url).status_code == 403
    node.refresh_from_db()
    assert node.state == StorageNode.State.ONLINE
    assert list(StorageEvent.objects.values_list("kind", flat=True)) == [StorageEvent.Kind.NODE_ADDED]
    assert sent == []


@pytest.mark.parametrize("role", OTHERS)
def test_only_engineers_add_nodes_and_verify_files(client, tmp_path, sent, role):
    client.force_login(user_for(role))
    data = {"name": "n1", "location": "here", "root": str(tmp_path / "n1")}
    assert client.post(reverse("storage:node_add"), data).status_code == 403
    warc = make_file()
    make_replica(warc, make_node(tmp_path, "n2"))
    assert client.post(reverse("storage:warcfile_verify", kwargs={"pk": warc.pk})).status_code == 403
    assert list(StorageNode.objects.values_list("name", flat=True)) == ["n2"]
    assert sent == []


def test_engineers_find_storage_under_operations(engineer):
    page = engineer.get(reverse("area", kwargs={"area": "operations"})).content.decode()
    assert reverse("storage:node_list") in page


# Adding a node --------------------------------------------------------------------------------------


def test_adding_a_node_creates_its_root_and_shows_its_capacity(engineer, tmp_path):
    root = tmp_path / "disks" / "a"
    response = engineer.post(
        reverse("storage:node_add"),
        {"name": "node-a", "location": "paris", "root": str(root), "local_worker": "on"},
    )
    node = StorageNode.objects.get()
    assert response.status_code == 302 and response["Location"] == node.get_absolute_url()
    assert (root / ".webarchive-node").read_text().strip() == "node-a"
    assert node.local_worker and node.queue == "storage-node-a"
    assert node.capacity and node.free is not None and node.reachable
    added = StorageEvent.objects.get()
    assert (
        added.kind == StorageEvent.Kind.NODE_ADDED and str(added.user.pk) == engineer.session["_auth_user_id"]
    )
    html = engineer.get(reverse("storage:node_list")).content.decode()
    row = re.search(r'<tr id="node-node-a">(.*?)</tr>', html, re.S).group(1)
    assert "paris" in row and str(root) in row and "online" in row and "reachable" in row
    assert 'class="progress-bar' in row and f"w-pct-{node.used_percent:.0f}" in row  # no style="": CSP
    assert re.search(r"used of [\d.,]+\xa0[KMGTP]B, [\d.,]+\xa0[KMGTP]?B free", row)  # filesizeformat


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"root": "relative/dir"}, "root", "Give an absolute path."),
        ({"name": "taken"}, "name", "already exists"),
        ({"root": "{taken}/inside"}, "root", "overlaps node taken"),
        ({"root": "{parent}"}, "root", "overlaps node taken"),
        ({"name": "not a slug"}, "name", "letters, numbers, underscores or hyphens"),
    ],
    ids=["relative", "duplicate-name", "inside-another", "around-another", "bad-name"],
)
def test_bad_input_is_shown_at_its_field_and_adds_nothing(engineer, tmp_path, data, field, message):
    taken = make_node(tmp_path, "taken")
    before = set(StorageEvent.objects.values_list("pk", flat=True))
    form = {"name": "new", "location": "here", "root": str(tmp_path / "fresh")}
    form.update(
        {key: value.format(taken=taken.root, parent=tmp_path / "nodes") for key, value in data.items()}
    )
    response = engineer.post(reverse("storage:node_add"), form)
    assert response.status_code == 200
    assert message in field_html(response.content.decode(), field)
    assert list(StorageNode.objects.values_list("name", flat=True)) == ["taken"]
    assert set(StorageEvent.objects.values_list("pk", flat=True)) == before
    assert not (tmp_path / "fresh").exists()


# A node's actions -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "kind"),
    [
        ("storage:node_add", StorageEvent.Kind.NODE_ADDED),
        ("storage:node_offline", StorageEvent.Kind.NODE_OFFLINE),
        ("storage:node_online", StorageEvent.Kind.NODE_ONLINE),
        ("storage:node_drain", StorageEvent.Kind.NODE_DRAINING),
        ("storage:node_verify", StorageEvent.Kind.VERIFY_ASKED),
        ("storage:warcfile_verify", StorageEvent.Kind.VERIFY_ASKED),
    ],
)
def test_every_action_on_the_storage_is_an_event_naming_the_engineer(
    engineer, tmp_path, sent, django_capture_on_commit_callbacks, action, kind
):
    node = make_node(tmp_path, "n1")
    warc = make_file()
    make_replica(warc, node)
    if action == "storage:node_online":
        StorageNode.objects.filter(pk=node.pk).update(state=StorageNode.State.OFFLINE)
    if action == "storage:node_add":
        url, target = reverse(action), None
        data = {"name": "n2", "location": "here", "root": str(tmp_path / "n2")}
    elif action == "storage:warcfile_verify":
        url, data, target = reverse(action, kwargs={"pk": warc.pk}), {}, warc
    else:
        url, data, target = reverse(action, kwargs={"pk": node.pk}), {}, node
    before = set(StorageEvent.objects.values_list("pk", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        assert engineer.post(url, data).status_code == 302
    new = StorageEvent.objects.exclude(pk__in=before).order_by("pk")
    assert [event.kind for event in new] == [kind]
    done = new.get()
    assert str(done.user_id) == engineer.session["_auth_user_id"]
    if action == "storage:node_add":
        assert done.node.name == "n2"
    elif action == "storage:warcfile_verify":
        assert done.warc_file == target and done.detail == "1 replicas sent to be verified."
    else:
        assert done.node == target
    if kind == StorageEvent.Kind.VERIFY_ASKED or action == "storage:node_online":
        assert sent == [(warc.replicas.get().pk, "default")]  # sent once the action is committed


def test_a_node_page_shows_its_replicas_and_events(engineer, tmp_path):
    node = make_node(tmp_path, "n1")
    ok, broken = make_file("a.warc.gz"), make_file("b.warc.gz")
    make_replica(ok, node)
    make_replica(broken, node, Replica.State.CORRUPT)
    event(StorageEvent.Kind.CORRUPT, node=node, warc_file=broken, detail="SHA-256 differs")
    html = engineer.get(node.get_absolute_url()).content.decode()
    assert "2 replicas" in html and "a.warc.gz" in html and "b.warc.gz" in html
    assert "replica-state-corrupt" in html and "never" in html  # the corrupt one was never verified
    assert "1 ok (1000\xa0bytes), 1 not ok" in html
    assert "SHA-256 differs" in html and "node added" in html
    for button in ("node-offline", "node-drain", "node-verify"):
        assert f'id="{button}"' in html
    assert 'id="node-online"' not in html


def test_node_replicas_are_paginated(engineer, tmp_path):
    node = make_node(tmp_path, "n1")
    for number in range(55):
        make_replica(make_file(f"f{number:03}.warc.gz"), node)
    first = engineer.get(node.get_absolute_url()).content.decode()
    second = engineer.get(node.get_absolute_url() + "?page=2").content.decode()
    assert "f000.warc.gz" in first and "f054.warc.gz" not in first
    assert "f054.warc.gz" in second and "1 / 2" in first


def test_marking_a_node_offline_counts_its_replicas_missing(engineer, tmp_path, sent):
    node = make_node(tmp_path, "n1")
    replica = make_replica(make_file(), node)
    response = engineer.post(
        reverse("storage:node_offline", kwargs={"pk": node.pk}), {"reason": "disk swap"}, follow=True
    )
    node.refresh_from_db()
    replica.refresh_from_db()
    assert node.state == StorageNode.State.OFFLINE and replica.state == Replica.State.MISSING
    offline = StorageEvent.objects.get(kind=StorageEvent.Kind.NODE_OFFLINE)
    assert offline.node == node and offline.user.username == response.context["user"].username
    assert "1 replicas counted missing" in offline.detail and "disk swap" in offline.detail
    html = response.content.decode()
    assert "n1 is offline" in html and "node-state-offline" in html
    assert 'id="node-online"' in html and 'id="node-offline"' not in html
    assert sent == []


def test_marking_a_node_online_sends_the_verification_of_its_replicas(
    engineer, tmp_path, sent, django_capture_on_commit_callbacks
):
    node = make_node(tmp_path, "n1", local_worker=True)
    replicas = [make_replica(make_file(), node) for _ in range(2)]
    make_replica(make_file(), node, Replica.State.COPYING)  # a copy in progress is not verified
    engineer.post(reverse("storage:node_offline", kwargs={"pk": node.pk}))
    with django_capture_on_commit_callbacks(execute=True):
        response = engineer.post(reverse("storage:node_online", kwargs={"pk": node.pk}), follow=True)
    node.refresh_from_db()
    assert node.state == StorageNode.State.ONLINE
    assert StorageEvent.objects.filter(kind=StorageEvent.Kind.NODE_ONLINE, user__isnull=False).count() == 1
    assert sorted(sent) == [(replica.pk, "storage-n1") for replica in replicas]
    assert "2 replicas are being verified" in response.content.decode()


def test_a_node_marked_online_that_cannot_be_reached_sends_nothing(
    engineer, tmp_path, sent, django_capture_on_commit_callbacks
):
    node = make_node(tmp_path, "n1")
    make_replica(make_file(), node)
    engineer.post(reverse("storage:node_offline", kwargs={"pk": node.pk}))
    (Path(node.root) / ".webarchive-node").unlink()  # the disk is not mounted
    with django_capture_on_commit_callbacks(execute=True):
        response = engineer.post(reverse("storage:node_online", kwargs={"pk": node.pk}), follow=True)
    node.refresh_from_db()
    assert node.state == StorageNode.State.ONLINE and not node.reachable
    assert sent == []
    assert "cannot be reached" in response.content.decode()


def test_draining_a_node(engineer, tmp_path):
    node = make_node(tmp_path, "n1")
    make_replica(make_file(), node)
    response = engineer.post(reverse("storage:node_drain", kwargs={"pk": node.pk}), follow=True)
    node.refresh_from_db()
    assert node.state == StorageNode.State.DRAINING
    drained = StorageEvent.objects.get(kind=StorageEvent.Kind.NODE_DRAINING)
    assert drained.detail == "1 replicas to move." and drained.user is not None
    assert "n1 is draining" in response.content.decode()


@pytest.mark.parametrize(
    ("action", "state", "message"),
    [
        ("storage:node_drain", StorageNode.State.RETIRED, "Node n1 is retired."),
        ("storage:node_offline", StorageNode.State.RETIRED, "Node n1 is retired."),
        ("storage:node_verify", StorageNode.State.RETIRED, "Node n1 is retired."),
        ("storage:node_online", StorageNode.State.ONLINE, "Node n1 is online."),
    ],
)
def test_an_action_the_node_state_refuses_shows_why_and_changes_nothing(
    engineer, tmp_path, sent, django_capture_on_commit_callbacks, action, state, message
):
    node = make_node(tmp_path, "n1")
    make_replica(make_file(), node)
    StorageNode.objects.filter(pk=node.pk).update(state=state)
    events = StorageEvent.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        response = engineer.post(reverse(action, kwargs={"pk": node.pk}), follow=True)
    assert response.redirect_chain[-1][0] == node.get_absolute_url()
    assert message in response.content.decode() and "alert-danger" in response.content.decode()
    node.refresh_from_db()
    assert node.state == state and StorageEvent.objects.count() == events
    assert sent == []


def test_verify_now_sends_every_replica_of_the_node_on_its_queue(
    engineer, tmp_path, sent, django_capture_on_commit_callbacks
):
    node = make_node(tmp_path, "n1", local_worker=True)
    other = make_node(tmp_path, "n2")
    ok = make_replica(make_file(), node)
    corrupt = make_replica(make_file(), node, Replica.State.CORRUPT)
    make_replica(make_file(), node, Replica.State.COPYING)
    make_replica(make_file(), other)
    with django_capture_on_commit_callbacks(execute=True):
        response = engineer.post(reverse("storage:node_verify", kwargs={"pk": node.pk}), follow=True)
    assert sent == [(ok.pk, "storage-n1"), (corrupt.pk, "storage-n1")]
    assert "2 replicas of n1 are being verified" in response.content.decode()


def test_nothing_is_sent_before_the_request_commits(
    engineer, tmp_path, sent, django_capture_on_commit_callbacks
):
    node = make_node(tmp_path, "n1")
    make_replica(make_file(), node)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        engineer.post(reverse("storage:node_verify", kwargs={"pk": node.pk}))
    assert sent == [] and len(callbacks) == 1


# A WARC file's replicas ------------------------------------------------------------------------------


def test_a_file_page_shows_its_replicas_and_ingest_to_engineers_only(as_role, tmp_path):
    warc = make_file("crawl.warc.gz")
    WarcFile.objects.filter(pk=warc.pk).update(ingest_step="indexed", ingest_error="node n2 is full")
    make_replica(warc, make_node(tmp_path, "n1"))
    make_replica(warc, make_node(tmp_path, "n2"), Replica.State.MISSING)
    html = as_role(Role.ENGINEER).get(warc.get_absolute_url()).content.decode()
    section = re.search(r'<section class="[^"]*" id="warcfile-replicas".*?</section>', html, re.S).group(0)
    assert 'id="replica-n1"' in section and 'id="replica-n2"' in section
    assert warc.sha256 in section and "replica-state-missing" in section
    assert "indexed" in section and "node n2 is full" in section
    assert 'id="warcfile-verify"' in section
    reader = as_role(Role.LIBRARIAN).get(warc.get_absolute_url())
    assert reader.status_code == 200 and 'id="warcfile-replicas"' not in reader.content.decode()


def test_verify_now_on_a_file_sends_its_replicas_each_on_its_node_queue(
    engineer, tmp_path, sent, django_capture_on_commit_callbacks
):
    warc = make_file()
    first = make_replica(warc, make_node(tmp_path, "n1", local_worker=True))
    second = make_replica(warc, make_node(tmp_path, "n2"), Replica.State.CORRUPT)
    make_replica(warc, make_node(tmp_path, "n3"), Replica.State.COPYING)
    make_replica(make_file(), StorageNode.objects.get(name="n1"))  # another file's
    with django_capture_on_commit_callbacks(execute=True):
        response = engineer.post(reverse("storage:warcfile_verify", kwargs={"pk": warc.pk}), follow=True)
    assert sent == [(first.pk, "storage-n1"), (second.pk, "default")]
    assert response.redirect_chain[-1][0] == warc.get_absolute_url()
    assert "2 replicas of" in response.content.decode()


def test_verify_now_on_a_file_without_replicas_says_so(engineer, sent):
    warc = make_file()
    response = engineer.post(reverse("storage:warcfile_verify", kwargs={"pk": warc.pk}), follow=True)
    assert "has no replica to verify" in response.content.decode() and sent == []


# History --------------------------------------------------------------------------------------------


def test_history_is_newest_first_and_filters_by_kind_node_and_alerts(engineer, tmp_path):
    first, second = make_node(tmp_path, "n1"), make_node(tmp_path, "n2")
    warc = make_file("lost.warc.gz")
    event(StorageEvent.Kind.NO_GOOD_REPLICA, warc_file=warc, detail="nothing readable")
    event(StorageEvent.Kind.COPY_FAILED, node=second, warc_file=warc, detail="disk full")
    event(StorageEvent.Kind.VERIFIED, node=first, warc_file=warc, detail="fine again")
    url = reverse("storage:storage_events")

    def details(query=""):
        html = engineer.get(url + query).content.decode()
        return re.findall(r'<td class="small text-break">([^<]*)</td>', html)

    assert details()[:3] == ["fine again", "disk full", "nothing readable"]  # then the nodes added
    assert details("?alerts=true") == ["disk full", "nothing readable"]
    assert details(f"?node={second.pk}") == ["disk full", f"room-1: {second.root}"]
    assert details("?kind=verified") == ["fine again"]
    assert details(f"?kind=copy_failed&node={first.pk}") == []
    assert details("?file=lost") == ["fine again", "disk full", "nothing readable"]


def test_history_is_paginated(engineer, tmp_path):
    node = make_node(tmp_path, "n1")
    StorageEvent.objects.bulk_create(
        [StorageEvent(kind=StorageEvent.Kind.VERIFIED, node=node, detail=f"e{n}") for n in range(60)]
    )
    html = engineer.get(reverse("storage:storage_events")).content.decode()
    assert "61 events" in html and "1 / 2" in html


# Alerts ---------------------------------------------------------------------------------------------


def test_alerts_list_lost_and_under_replicated_files_unavailable_nodes_and_recent_alerts(engineer, tmp_path):
    good, offline, gone = (
        make_node(tmp_path, "good"),
        make_node(tmp_path, "offline"),
        make_node(tmp_path, "gone"),
    )
    make_node(tmp_path, "spare")  # where the short file's second replica can go
    safe = make_file("safe.warc.gz", wanted=1)
    make_replica(safe, good)
    short = make_file("short.warc.gz", wanted=2)
    make_replica(short, good)
    lost = make_file("lost.warc.gz", wanted=2)
    make_replica(lost, good, Replica.State.CORRUPT)
    engineer.post(reverse("storage:node_offline", kwargs={"pk": offline.pk}))
    Path(gone.root, ".webarchive-node").unlink()
    node_check(gone)
    old = event(StorageEvent.Kind.COPY_FAILED, node=good, detail="long ago")
    StorageEvent.objects.filter(pk=old.pk).update(at=timezone.now() - timedelta(days=30))

    html = engineer.get(reverse("storage:storage_alerts")).content.decode()
    lost_section = re.search(r'id="alerts-lost">(.*?)</section>', html, re.S).group(1)
    under_section = re.search(r'id="alerts-under-replicated">(.*?)</section>', html, re.S).group(1)
    nodes_section = re.search(r'id="alerts-nodes">(.*?)</section>', html, re.S).group(1)
    events_section = re.search(r'id="alerts-events">(.*?)</section>', html, re.S).group(1)
    assert "1 file without a good replica" in lost_section and "lost.warc.gz" in lost_section
    assert "short.warc.gz" in under_section and "safe.warc.gz" not in under_section
    assert "offline" in nodes_section and "gone" in nodes_section and ">good<" not in nodes_section
    assert "node unreachable" in events_section and "long ago" not in events_section
    # The badge: lost.warc.gz and short.warc.gz (each once), and two unavailable nodes.
    assert selectors_storage.alert_count() == 4
    listing = engineer.get(reverse("storage:node_list")).content.decode()
    assert re.search(r'id="storage-alert-count"[^>]*>4<', listing) and "4 alerts" in listing


def test_no_alert_no_badge(engineer, tmp_path):
    make_replica(make_file(wanted=1), make_node(tmp_path, "n1"))
    html = engineer.get(reverse("storage:storage_alerts")).content.decode()
    assert 'id="no-alerts"' in html and 'id="storage-alert-count"' not in html


# Statistics -----------------------------------------------------------------------------------------


def test_statistics_per_node_definition_and_year(engineer, tmp_path):
    from tests.webarchive.test_url_access import new_job

    job = new_job()
    first, second = make_node(tmp_path, "n1"), make_node(tmp_path, "n2")
    in_2024 = datetime(2024, 6, 1, 12, tzinfo=UTC)
    twice = make_file("twice.warc.gz", size=1000, job=job, created_at=in_2024)
    make_replica(twice, first)
    make_replica(twice, second)
    once = make_file("once.warc.gz", size=300, job=job)
    make_replica(once, first)
    make_replica(once, second, Replica.State.CORRUPT)
    imported = make_file("imported.warc.gz", size=50)
    make_replica(imported, second)
    make_file("nowhere.warc.gz", size=7)  # no ok replica: not stored

    assert selectors_storage.stored_totals() == {
        "files": 3,
        "bytes": 1350,
        "replicas": 4,
        "replica_bytes": 2350,
    }
    per_definition = selectors_storage.stored_per_definition()
    assert [
        (row["definition_name"], row["files"], row["bytes"], row["replicas"], row["replica_bytes"])
        for row in per_definition
    ] == [
        (job.harvest_definition.name, 2, 1300, 3, 2300),
        (None, 1, 50, 1, 50),
    ]
    per_year = {
        row["year"]: (row["files"], row["bytes"], row["replica_bytes"])
        for row in selectors_storage.stored_per_year()
    }
    assert per_year == {2024: (1, 1000, 2000), timezone.localdate().year: (2, 350, 350)}
    per_node = {node.name: (node.files, node.stored) for node in selectors_storage.stored_per_node()}
    assert per_node == {"n1": (2, 1300), "n2": (2, 1050)}

    html = engineer.get(reverse("storage:storage_statistics")).content.decode()
    definitions = re.search(r'id="statistics-definitions">(.*?)</section>', html, re.S).group(1)
    assert job.harvest_definition.name in definitions and "(not from a harvest)" in definitions
    assert reverse("harvest:definition_detail", args=[job.harvest_definition.pk]) in definitions
    years = re.search(r'id="statistics-years">(.*?)</section>', html, re.S).group(1)
    assert "<td>2024</td>" in years
    assert "3 files stored" in html
