"""Steering a site crawl while it runs (harvest.crawler): pause and resume, rules added, budgets
changed, the biggest queues; against the local test website, deterministic (states, not time)."""

from __future__ import annotations

import threading

from harvest.crawler.engine import CrawlEngine
from harvest.crawler.frontier import Candidate, Frontier
from harvest.crawler.outcomes import COMPLETED, OBJECT_LIMIT, OPERATOR
from harvest.crawler.site import SiteCrawl
from tests.crawler.sitecrawl import crawl

WAIT = 60  # seconds at most for a state a test waits on (never reached when things work)
PAUSE_AFTER = 20  # URLs a crawl fetches before it pauses itself


class PausingCrawl(SiteCrawl):
    """A site crawl that pauses itself (through its engine handle) once it has fetched PAUSE_AFTER URLs."""

    handle = None

    def step(self):
        delay = super().step()
        if delay is not None and self.urls_done >= PAUSE_AFTER and not self.pause_seen.is_set():
            self.handle.pause()
            self.pause_seen.set()
        return delay


def _wait_idle(engine: CrawlEngine, handle) -> None:
    """Wait until no thread is in the site's step and the engine holds no live turn of it."""
    pause = threading.Event()
    for _ in range(WAIT * 100):
        with engine._ready:
            if not handle.running and all(due.turn != handle.turn for due in engine._heap):
                return
        pause.wait(0.01)
    raise AssertionError("the paused site was still stepped")


def _steered(tmp_path, seeds, monkeypatch, while_paused, **options):
    """Crawl ``seeds``; once paused (after PAUSE_AFTER URLs), ``while_paused(crawl, handle, engine)``;
    then resume unless it has stopped the crawl. Returns the crawl and the URLs done while paused."""
    monkeypatch.setattr("tests.crawler.sitecrawl.SiteCrawl", PausingCrawl)
    seen = {}

    def run(site):
        site.pause_seen = threading.Event()
        engine = CrawlEngine(threads=2)
        site.handle = handle = engine.submit(site)
        assert site.pause_seen.wait(WAIT)
        _wait_idle(engine, handle)
        site._writes.wait()  # the log lines of what was fetched are written
        seen["paused_at"] = site.urls_done
        seen["log_lines"] = len(site.crawl_log.path.read_text().splitlines())
        assert handle.paused and not handle.done
        while_paused(site, handle, engine)
        if not handle.stopping:
            _wait_idle(engine, handle)
            seen["still"] = site.urls_done  # nothing fetched while paused
            handle.resume()
        assert handle.wait(WAIT)
        engine.shutdown()

    return crawl(tmp_path, seeds, run=run, **options), seen


def test_pause_keeps_everything_and_resume_finishes_with_every_url(testsite, tmp_path, monkeypatch):
    whole = crawl(tmp_path / "whole", [testsite.url("/site/")])
    (tmp_path / "steered").mkdir()
    result, seen = _steered(
        tmp_path / "steered", [testsite.url("/site/")], monkeypatch, lambda site, handle, engine: None
    )
    assert seen["paused_at"] == seen["still"] == PAUSE_AFTER
    assert result.crawl.stop_reason == COMPLETED
    assert sorted(result.fetched) == sorted(whole.fetched)  # no URL lost, none twice
    assert len(result.fetched) == len(set(result.fetched))


def test_a_rule_added_while_paused_drops_what_is_queued_and_new_links(testsite, tmp_path, monkeypatch):
    whole = crawl(tmp_path / "whole", [testsite.url("/site/")])
    state = {}

    def add_rule(site, handle, engine):
        state["queued_before"] = site.progress().urls_queued
        state["calendar_queued"] = sum(
            count for prefix, count in site.frontier.prefixes.items() if "/site/calendar/" in prefix
        )
        site.add_rules(reject=[r"/site/calendar/"])
        handle.steer()  # no thread is in its step: applied at once
        state["queued_after"] = site.progress().urls_queued
        state["queues"] = site.progress().biggest_queues

    (tmp_path / "steered").mkdir()
    result, seen = _steered(tmp_path / "steered", [testsite.url("/site/")], monkeypatch, add_rule)
    assert result.crawl.stop_reason == COMPLETED
    assert state["calendar_queued"] > 0
    assert result.crawl.steered_out == state["calendar_queued"]
    assert state["queued_after"] == state["queued_before"] - state["calendar_queued"]
    assert not any("/site/calendar/" in prefix for prefix, _count in state["queues"]["paths"])
    # Nothing the rule matches was fetched once it took effect (the crawl log after the pause).
    after = [fields for fields in result.lines[seen["log_lines"] :] if int(fields[1]) > 0]
    assert after and not [fields[3] for fields in after if "/site/calendar/" in fields[3]]
    assert any("/site/calendar/" in url for url in whole.fetched)
    assert set(result.fetched) == {url for url in whole.fetched if "/site/calendar/" not in url} | {
        fields[3] for fields in result.lines[: seen["log_lines"]] if int(fields[1]) > 0
    }
    assert result.crawl.report()["steered_out"] == result.crawl.steered_out


def test_a_trap_added_while_running_applies_at_the_next_step(testsite, tmp_path, monkeypatch):
    def add_trap(site, handle, engine):
        site.add_rules(traps=[r"/site/(calendar|img)/"])  # kept for its next step (a thread may be in one)
        handle.resume()
        handle.pause = lambda: None  # it runs on to its end

    monkeypatch.setattr("tests.crawler.sitecrawl.SiteCrawl", PausingCrawl)
    result, seen = _steered(tmp_path, [testsite.url("/site/")], monkeypatch, add_trap)
    after = [fields[3] for fields in result.lines[seen["log_lines"] :] if int(fields[1]) > 0]
    assert after and not [url for url in after if "/site/img/" in url or "/site/calendar/" in url]
    assert result.crawl.steered_out > 0


def test_a_budget_lowered_below_what_is_done_ends_the_site_with_its_limit(testsite, tmp_path, monkeypatch):
    def lower(site, handle, engine):
        reached = site.set_budget(max_objects=5, max_bytes=-1)
        assert reached == OBJECT_LIMIT
        handle.stop(reached)  # what the worker does (harvest.steering), paused or not

    result, _seen = _steered(tmp_path, [testsite.url("/site/")], monkeypatch, lower)
    assert result.crawl.stop_reason == OBJECT_LIMIT
    assert result.crawl.urls_done == PAUSE_AFTER


def test_a_budget_raised_lets_the_site_go_on(testsite, tmp_path, monkeypatch):
    def raise_budget(site, handle, engine):
        assert site.set_budget(max_objects=PAUSE_AFTER + 10, max_bytes=-1) == ""

    result, _seen = _steered(
        tmp_path, [testsite.url("/site/")], monkeypatch, raise_budget, max_objects=PAUSE_AFTER + 1
    )
    assert result.crawl.stop_reason == OBJECT_LIMIT
    assert result.crawl.urls_done == PAUSE_AFTER + 10


def test_a_site_started_paused_fetches_nothing_and_stops_at_once(testsite, tmp_path):
    def run(site):
        engine = CrawlEngine(threads=1)
        handle = engine.submit(site, paused=True)
        _wait_idle(engine, handle)
        assert site.urls_done == 0 and not handle.done
        handle.stop(OPERATOR)
        assert handle.wait(WAIT)
        engine.shutdown()

    result = crawl(tmp_path, [testsite.url("/site/")], run=run)
    assert result.crawl.stop_reason == OPERATOR
    assert result.fetched == []
    assert result.crawl.progress().urls_queued >= 1  # what it had queued is reported, not lost


def test_biggest_queues_are_counted_as_urls_come_and_go():
    frontier = Frontier()
    for index in range(30):
        frontier.add_page(Candidate(f"http://trap.example/cal/{index}/day.html", "L", "", True))
    for index in range(5):
        frontier.add_page(Candidate(f"http://good.example/page{index}.html", "L", "", True))
    frontier.add_component(Candidate("http://good.example/img/a/b/c.png", "E", "", True))
    queues = frontier.biggest_queues(top=2)
    assert queues["hosts"] == [["trap.example", 30], ["good.example", 6]]
    assert queues["paths"] == [["trap.example/cal/", 30], ["good.example/", 5]]
    assert frontier.drop(lambda url: "/cal/" in url) == 30
    assert frontier.biggest_queues()["hosts"] == [["good.example", 6]]
    assert frontier.biggest_queues()["paths"] == [
        ["good.example/", 5],
        ["good.example/img/", 1],
        ["good.example/img/a/", 1],
    ]
    while frontier.pop() is not None:
        pass
    assert frontier.biggest_queues() == {"hosts": [], "paths": []}
    assert frontier.seen("http://trap.example/cal/3/day.html")  # dropped, not queued again


def test_biggest_queues_are_bounded_and_sent_with_progress(testsite, tmp_path, monkeypatch):
    state = {}

    def look(site, handle, engine):
        site._snapshot_queues(force=True)
        state["queues"], state["queued"] = site.progress().biggest_queues, len(site.frontier)
        handle.stop(OPERATOR)

    result, _seen = _steered(tmp_path, [testsite.url("/site/")], monkeypatch, look)
    queues = state["queues"]
    assert 0 < len(queues["hosts"]) <= 10 and 0 < len(queues["paths"]) <= 10
    assert sum(count for _host, count in queues["hosts"]) == state["queued"]  # every queued URL's host
    assert queues["paths"] == sorted(queues["paths"], key=lambda row: -row[1])
    assert result.crawl.progress().biggest_queues == {}  # ended: nothing queued to show
