"""What the benchmarks share: the machine they ran on, and the PostgreSQL server they make databases on.

Imported by the scripts once the repository root is on ``sys.path`` (``from benchmarks.environment
import …`` inside their functions), and by the tests that load them.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``), empty if unknown."""
    with contextlib.suppress(OSError):
        models = re.findall(r"^model name\s*: (.*)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE)
        return models[0] if models else ""
    return ""


def cpus() -> str:
    """``2 (AMD EPYC …)``: how many CPUs and which."""
    return f"{os.cpu_count()} ({cpu_model()})"


def memory() -> str:
    """The machine's memory (``/proc/meminfo``), ``?`` if unknown."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        kib = re.search(r"^MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text(), re.MULTILINE).group(1)
        return f"{int(kib) / 2**20:.1f} GiB"
    return "?"


def maintenance_connection(url: str, *, allow_sqlite: bool = False) -> tuple[dict | None, str]:
    """psycopg arguments for the ``postgres`` database of the server ``url`` names, and ``url``'s database
    name (arguments None for an SQLite URL when ``allow_sqlite``)."""
    import environ

    config = environ.Env.db_url_config(url)
    if allow_sqlite and config["ENGINE"] == "django.db.backends.sqlite3":
        return None, config["NAME"]
    if config["ENGINE"] != "django.db.backends.postgresql":
        raise SystemExit(f"This benchmark runs on PostgreSQL; {url} is not a postgres:// URL.")
    arguments = {"dbname": "postgres", "user": config.get("USER") or None}
    for key, name in (("HOST", "host"), ("PORT", "port"), ("PASSWORD", "password")):
        if config.get(key):
            arguments[name] = str(config[key])
    return arguments, config["NAME"]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _close_django() -> None:
    if "django" in sys.modules:
        from django.db import connections

        connections.close_all()


@contextlib.contextmanager
def throwaway_database(
    url: str, log=_stderr, *, keep: bool = False, reuse: bool = False, allow_sqlite: bool = True
):
    """Create the database ``url`` names (refusing an existing one), and drop it however the block ends;
    with ``keep``, leave it at the end of a run that did not fail; with ``reuse``, use the one an earlier
    run kept. An SQLite URL (the scripts' smoke tests) is a new file, removed at the end, unless not
    ``allow_sqlite``."""
    server, name = maintenance_connection(url, allow_sqlite=allow_sqlite)
    if reuse or keep:
        if server is None:
            raise SystemExit("--keep and --reuse need a PostgreSQL database.")
        if reuse:
            try:
                yield name
            finally:
                _close_django()
            log(f"Kept the database {name}.")
            return
    if server is None:
        if Path(name).exists():
            raise SystemExit(f"The database {name} exists; this benchmark only uses one it creates.")
        try:
            yield name
        finally:
            _close_django()
            for suffix in ("", "-wal", "-shm"):
                Path(name + suffix).unlink(missing_ok=True)
            log(f"Dropped the database {name}.")
        return
    import psycopg
    from psycopg import sql

    with psycopg.connect(**server, autocommit=True) as connection:
        try:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except psycopg.errors.DuplicateDatabase:
            raise SystemExit(
                f"The database {name} exists; this benchmark only uses one it creates (drop it if an"
                " earlier run was killed, or give another --database-url)."
            ) from None
    dropped = False
    try:
        yield name
        dropped = not keep
    except BaseException:
        dropped = True
        raise
    finally:
        _close_django()
        if dropped:
            with psycopg.connect(**server, autocommit=True) as connection:
                connection.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )
            log(f"Dropped the database {name}.")
        else:
            log(f"Kept the database {name} (drop it when done, or measure again with --reuse).")


def crawl_test_sites(
    directory: Path,
    *,
    size: int,
    file_size: int,
    prefix: str,
    software: str,
    sites,
    log,
    same_port: bool = False,
):
    """Crawl test websites into gzip WARC files in ``directory`` until they hold ``size`` bytes.

    ``sites(n)`` gives the keyword arguments of the ``n``-th site (``TestSite(**options)``, n from 1)
    and a label for the log; with ``same_port`` every site is served on the port the first one took.
    Returns the closed files (``warc.ClosedFile``), the number of crawls and the URLs crawled."""
    from harvest.crawler import warc
    from harvest.crawler.crawllog import CrawlLog
    from harvest.crawler.engine import run_sites
    from harvest.crawler.fetch import Fetcher
    from harvest.crawler.site import SiteCrawl, SiteSettings
    from webarchive.netguard import AddressPolicy
    from webarchive.testsite import TestSite

    closed: list = []
    writer = warc.WarcWriter(
        directory=directory,
        prefix=prefix,
        job_id=1,
        host="bench",
        max_size=file_size,
        warcinfo={"software": software},
        on_file_closed=closed.append,
    )
    fetcher = Fetcher(
        user_agent="webarchive-bench/1 (+http://127.0.0.1/)",
        address_check=AddressPolicy(allow_private=True).refusal,
    )
    no_delay = {"min_delay": 0.0, "max_delay": 0.0, "delay_factor": 0.0}
    crawls, urls, port = 0, 0, 0
    with CrawlLog(directory / "crawl.log") as crawl_log:
        while sum(info.size for info in closed) + _open_size(directory) < size:
            options, label = sites(crawls + 1)
            with TestSite(**({"port": port} if same_port else {}), **options) as site:
                port = site.port
                crawl = SiteCrawl(
                    SiteSettings(seeds=[site.url("/site/")], **no_delay),
                    session=fetcher.session(),
                    writer=writer,
                    crawl_log=crawl_log,
                )
                run_sites([crawl], threads=4)
            if crawl.broken:
                raise RuntimeError(f"the crawl of {label} broke: {crawl.error}")
            crawls += 1
            urls += crawl.urls_done
            log(f"  {label}: {crawl.urls_done:,} URLs")
        writer.close()
    (directory / "crawl.log").unlink()
    return closed, crawls, urls


def _open_size(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.glob("*.open"))
