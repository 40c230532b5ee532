"""A preparation's DNS check (against a real dnsmasq) and redirect discovery (against the test
website), end to end: domains made inactive and active again, domains found by redirects, resuming
in those stages, and the snapshot harvest that follows."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from harvest.choices import HarvestKind
from harvest.models import Domain, Job, PreloadDomain, PreloadRun
from harvest.services.domains import domain_create, domain_update
from harvest.services.launcher import launch_due
from harvest.services.planning import definition_run_now, definition_save
from harvest.services.preload import SourceSpec, preload_create, preload_run
from harvest.services.preload import progress as preload_progress
from tests.dns_server import dns_server
from tests.harvest.test_preload import all_loaded
from webarchive import netguard
from webarchive.testsite import TestSite


class Killed(BaseException):
    """A worker killed in the middle of a stage."""


@pytest.fixture
def snapshot(db):
    return definition_save(kind=HarvestKind.SNAPSHOT, name="broad-dns")


def write(tmp_path, name, *lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_no_dns_answer_makes_a_domain_inactive_and_a_later_answer_active_again(snapshot, tmp_path):
    domain_create(name="known-alive.fr")
    domain_create(name="known-dead.fr")
    closed = domain_create(name="closed-by-hand.fr")
    domain_update(domain=closed, is_active=False)
    names = ["known-alive.fr", "known-dead.fr", "new-alive.fr", "new-dead.fr", "closed-by-hand.fr"]
    path = write(tmp_path, "list.txt", *names)
    served = {
        "known-alive.fr": "192.0.2.1",
        "www.new-alive.fr": "192.0.2.2",
        "closed-by-hand.fr": "192.0.2.3",
    }

    with dns_server(served) as server:
        options = {"check_dns": True, "find_redirects": False, "include_selection": False}
        first = preload_run(
            preload_create(
                harvest_definition=snapshot,
                sources=[SourceSpec("registry", str(path))],
                nameservers=[server.nameserver],
                dns_timeout=1.0,
                **options,
            ).pk
        )
        assert first.state == PreloadRun.State.DONE, first.error
        dns = dict(PreloadDomain.objects.filter(run=first).values_list("name", "dns"))
        assert dns == {
            "known-alive.fr": "live",
            "known-dead.fr": "failed",
            "new-alive.fr": "live",  # through www.
            "new-dead.fr": "failed",
            "closed-by-hand.fr": "live",
        }
        assert PreloadDomain.objects.get(run=first, name="new-dead.fr").dns_detail == "no such domain"
        assert Domain.objects.filter(name="new-alive.fr", is_active=True).exists()
        assert not Domain.objects.filter(name="new-dead.fr").exists()  # new and dead: not created
        dead = Domain.objects.get(name="known-dead.fr")
        assert not dead.is_active and dead.dns_failed_at is not None
        assert not Domain.objects.get(name="closed-by-hand.fr").is_active  # a curator's choice stays
        assert (first.statistics["dns_failed"], first.statistics["inactive_existing"]) == (2, 1)
        assert first.statistics["new_excluded"] == 1

        # The snapshot leaves the inactive domains out.
        definition_run_now(definition=snapshot)
        launch_due(now=timezone.now() + timedelta(minutes=1))
        crawled = set(
            Job.objects.filter(harvest_definition=snapshot).values_list(
                "configurations__domain__name", flat=True
            )
        )
        assert {"known-alive.fr", "new-alive.fr"} <= crawled
        assert not crawled & {"known-dead.fr", "closed-by-hand.fr", "new-dead.fr"}

        server.serve({**served, "known-dead.fr": "192.0.2.4"})
        second = preload_run(
            preload_create(
                harvest_definition=snapshot,
                sources=[SourceSpec("registry", str(path))],
                nameservers=[server.nameserver],
                dns_timeout=1.0,
                **options,
            ).pk
        )
    assert second.state == PreloadRun.State.DONE, second.error
    dead.refresh_from_db()
    assert dead.is_active and dead.dns_failed_at is None


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, hosts=1) as site:
        site.add_redirect_host("old-paper.fr", "http://www.new-paper.fr/")
        site.add_redirect_host("www.moved.fr", "https://moved.co.uk/home")
        site.add_redirect_host("same.fr", "http://www.same.fr/")
        site.add_redirect_host("to-known.fr", "http://known.fr/")
        yield site


@pytest.fixture
def names_to_site(monkeypatch):
    """The DNS outside the machine: the test names go to the test site, other names do not exist."""
    served = {"old-paper.fr", "moved.fr", "www.moved.fr", "same.fr", "www.same.fr", "to-known.fr", "plain.fr"}

    def getaddrinfo(host, port, *args, **kwargs):
        if host not in served:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("127.0.0.1", port))]

    monkeypatch.setattr(netguard.socket, "getaddrinfo", getaddrinfo)


def test_redirects_to_unknown_domains_add_them(snapshot, tmp_path, site, names_to_site, settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.PRELOAD_REDIRECT_URL = f"http://{{host}}:{site.port}/"
    domain_create(name="known.fr")
    path = write(tmp_path, "list.txt", "old-paper.fr", "moved.fr", "same.fr", "to-known.fr", "plain.fr")
    run = preload_run(
        preload_create(
            harvest_definition=snapshot,
            sources=[SourceSpec("registry", str(path))],
            check_dns=False,
            include_selection=False,
        ).pk
    )
    assert run.state == PreloadRun.State.DONE, run.error
    found = {d.name: d for d in PreloadDomain.objects.filter(run=run, redirect_from__gt="")}
    assert set(found) == {"new-paper.fr", "moved.co.uk"}
    assert found["new-paper.fr"].sources == "redirect from old-paper.fr"
    assert found["moved.co.uk"].redirect_from == "moved.fr"
    assert Domain.objects.filter(name__in=["new-paper.fr", "moved.co.uk"]).count() == 2
    assert run.statistics["redirects"] == 2
    assert run.statistics["tlds"] == {"fr": 6, "uk": 1}


@pytest.mark.parametrize("stage", [PreloadRun.Stage.DNS, PreloadRun.Stage.REDIRECTS])
def test_a_run_killed_while_checking_resumes_to_the_same_result(
    snapshot, tmp_path, site, names_to_site, settings, monkeypatch, stage
):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.PRELOAD_REDIRECT_URL = f"http://{{host}}:{site.port}/"
    monkeypatch.setattr(preload_progress, "BATCH", 20)  # the redirect stage takes a tenth: 2 per batch
    path = write(
        tmp_path, "list.txt", "old-paper.fr", "moved.fr", "same.fr", "plain.fr", "x.fr", "y.fr", "z.fr"
    )
    served = {
        "old-paper.fr": "192.0.2.1",
        "moved.fr": "192.0.2.2",
        "same.fr": "192.0.2.3",
        "plain.fr": "192.0.2.4",
    }

    def final(run):
        run.refresh_from_db()
        rows = PreloadDomain.objects.filter(run=run).values_list("name", "sources", "dns", "redirect_from")
        return run.state, sorted(rows), run.statistics, all_loaded(run)

    with dns_server(served) as server:
        options = {
            "harvest_definition": snapshot,
            "sources": [SourceSpec("registry", str(path))],
            "nameservers": [server.nameserver],
            "dns_timeout": 1.0,
            "include_selection": False,
        }
        savepoint = transaction.savepoint()
        expected = final(preload_run(preload_create(**options).pk))
        transaction.savepoint_rollback(savepoint)
        assert expected[0] == PreloadRun.State.DONE

        monkeypatch.setattr(preload_progress, "BATCH", 3 if stage == PreloadRun.Stage.DNS else 20)
        run = preload_create(**options)
        real_advance = preload_progress.advance

        def advance(run, done, progress, **kwargs):
            real_advance(run, done, progress, **kwargs)
            if run.stage == stage:
                raise Killed

        monkeypatch.setattr(preload_progress, "advance", advance)
        with pytest.raises(Killed):
            preload_run(run.pk)
        monkeypatch.setattr(preload_progress, "advance", real_advance)
        run.refresh_from_db()
        assert run.stage == stage and run.state == PreloadRun.State.RUNNING
        assert final(preload_run(run.pk)) == expected
