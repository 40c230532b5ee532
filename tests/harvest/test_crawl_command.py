"""``manage.py crawl``: an ad-hoc crawl in the foreground, and its refusals of bad arguments."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from harvest.crawler.browser import chromium_executable
from tests.components import require_component
from tests.testsite_fixtures import self_signed_certificate
from webarchive.testsite import TestSite, scripted

WARCIO = Path(sys.executable).with_name("warcio")


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=2, pages=20, hosts=1, large_file_bytes=20_000, slow_seconds=0.01) as site:
        yield site


def test_a_crawl_writes_valid_warc_files_a_crawl_log_and_a_summary(site, tmp_path, capsys, settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    call_command("crawl", site.url("/site/"), "--warc-dir", str(tmp_path), "--delay", "0", "--quiet")
    out = capsys.readouterr().out
    assert "stop reason completed" in out
    files = sorted(tmp_path.glob("*.warc.gz"))
    assert files and all(file.name.startswith("crawl-0-") for file in files)
    for file in files:
        assert subprocess.run([str(WARCIO), "check", str(file)], capture_output=True).returncode == 0
    fetched = {line.split(" ")[3] for line in (tmp_path / "crawl.log").read_text().splitlines()}
    assert not site.ground_truth(policy="host") - fetched


def test_depth_and_limits_are_applied(site, tmp_path, capsys, settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    call_command(
        "crawl", site.url("/site/"), "--warc-dir", str(tmp_path), "--delay", "0", "--max-objects", "7"
    )
    out = capsys.readouterr().out
    assert "7 objects" in out and "stop reason object-limit" in out
    call_command(
        "crawl", site.url("/site/"), "--warc-dir", str(tmp_path / "page"), "--delay", "0", "--depth", "0"
    )
    hop_paths = [line.split(" ")[4] for line in (tmp_path / "page" / "crawl.log").read_text().splitlines()]
    assert hop_paths and not [hop_path for hop_path in hop_paths if "L" in hop_path]  # the page only


def test_the_address_guard_applies_to_ad_hoc_crawls(site, tmp_path, capsys, settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = False
    call_command("crawl", site.url("/site/"), "--warc-dir", str(tmp_path), "--delay", "0", "--quiet")
    out = capsys.readouterr().out
    assert "stop reason failed" in out and "0 objects" in out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["ftp://example.org/"], r"Not an http\(s\) URL: ftp://example.org/"),
        (["http://example.org/", "--accept", "("], "--accept: “\\(” is not a valid regular expression"),
        (
            ["http://example.org/", "--reject", r"\.(?!html)"],
            r"--reject: .* cannot be used: look-ahead and look-behind .* are not supported: .*RE2",
        ),
        (["http://example.org/", "--reject", r"(\w)\1"], r"back-references .* are not supported"),
        (["http://example.org/", "--delay", "-1"], "--delay cannot be negative"),
        (["http://example.org/", "--depth", "-2"], "--depth cannot be negative"),
        (["http://example.org/", "--threads", "0"], "--threads must be at least 1"),
        (
            ["http://example.org/", "--browser", "--page-seconds", "2"],
            "--page-seconds must be between 5 and 300",
        ),
    ],
)
def test_bad_arguments_are_refused_and_nothing_is_written(tmp_path, arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("crawl", *arguments, "--warc-dir", str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_invalid_certificates_are_archived_unless_verification_is_asked_for(tmp_path, capsys, settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    tls = self_signed_certificate(tmp_path, "127.0.0.1")
    with TestSite(port=0, tls=tls) as secure:
        call_command(
            "crawl", secure.url("/ok"), "--warc-dir", str(tmp_path / "a"), "--delay", "0", "--depth", "0"
        )
        assert "stop reason completed" in capsys.readouterr().out
        settings.HARVEST_VERIFY_TLS = True
        call_command(
            "crawl", secure.url("/ok"), "--warc-dir", str(tmp_path / "b"), "--delay", "0", "--depth", "0"
        )
        assert "stop reason failed" in capsys.readouterr().out
        assert "certificate_verify_failed" in (tmp_path / "b" / "crawl.log").read_text()


@pytest.mark.browser
def test_browser_renders_every_page_in_scope_and_captures_what_it_loads(site, tmp_path, capsys, settings):
    require_component("chromium", chromium_executable() is not None, "--browser renders in chromium")
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    base = site.url("/").rstrip("/")
    # The front page and, one click away, the one article the reject rule leaves.
    call_command(
        "crawl",
        site.url("/js/"),
        "--warc-dir",
        str(tmp_path),
        "--delay",
        "0",
        "--depth",
        "1",
        "--reject",
        r"/js/article/([^3]|\d\d)",
        "--ignore-robots",
        "--browser",
        "--quiet",
    )
    out = capsys.readouterr().out
    assert "stop reason completed" in out
    assert "2 pages rendered, 0 failed" in out
    fetched = {line.split(" ")[3] for line in (tmp_path / "crawl.log").read_text().splitlines()}
    assert scripted.browser_urls(base) <= fetched
    assert scripted.article_page_urls(base, 3) <= fetched  # rendered too: it was in scope
    for file in tmp_path.glob("*.warc.gz"):
        assert subprocess.run([str(WARCIO), "check", str(file)], capture_output=True).returncode == 0
