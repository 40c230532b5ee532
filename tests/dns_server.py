"""A throwaway DNS resolver for the DNS-check tests and benchmark: Debian's dnsmasq on 127.0.0.1.

``dns_server(names)`` starts ``/usr/sbin/dnsmasq`` (package ``dnsmasq-base``) in the
foreground on 127.0.0.1 and a free port, answering only for ``names`` (a hosts file it
reads with ``--addn-hosts``): every other name gets NXDOMAIN (``--local=/#/``), nothing is
forwarded anywhere (``--no-resolv``, no ``--server``), /etc/hosts is not read. ``serve()``
replaces the names and makes dnsmasq read them again (SIGHUP), so that a test can make a
failing domain resolve later. Without dnsmasq the test skips (fails under CI, see
``tests.components``).

``start_dnsmasq`` is the same without pytest, for ``benchmarks/preload_dns.py``.
"""

from __future__ import annotations

import contextlib
import getpass
import ipaddress
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

DNSMASQ = "/usr/sbin/dnsmasq"


class DnsServer:
    """A running dnsmasq serving a hosts file; ``nameserver`` is ``127.0.0.1:PORT``."""

    def __init__(self, process: subprocess.Popen, port: int, root: Path):
        self.process, self.port, self.root = process, port, root
        self.hosts, self.log = root / "hosts", root / "dnsmasq.log"

    @property
    def nameserver(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def serve(self, names: Mapping[str, str | Iterable[str]], timeout: float = 10.0) -> None:
        """Answer for ``names`` (and only them) from now on: name -> address or addresses."""
        before = self._log_text().count(f"read {self.hosts} ")
        write_hosts(self.hosts, names)
        self.process.send_signal(signal.SIGHUP)  # re-reads the addn-hosts file and empties the cache
        deadline = time.monotonic() + timeout
        while self._log_text().count(f"read {self.hosts} ") <= before:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dnsmasq did not read {self.hosts} again:\n{self._log_text()[-2000:]}")
            time.sleep(0.01)

    def queries_answered(self, timeout: float = 10.0) -> int:
        """How many queries dnsmasq has answered since it started (its statistics, on SIGUSR1)."""
        pattern = re.compile(r"queries forwarded (\d+), queries answered locally (\d+)")
        before = len(pattern.findall(self._log_text()))
        self.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while True:
            found = pattern.findall(self._log_text())
            if len(found) > before:
                forwarded, local = found[-1]
                return int(forwarded) + int(local)
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dnsmasq wrote no statistics:\n{self._log_text()[-2000:]}")
            time.sleep(0.01)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def _log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def write_hosts(path: Path, names: Mapping[str, str | Iterable[str]] | Iterable[tuple[str, str]]) -> None:
    """A hosts file: one ``ADDRESS NAME`` line per address (IPv4 for A, IPv6 for AAAA).

    ``names`` maps names to an address or addresses, or is a stream of (name, address) pairs."""
    with open(path.with_suffix(".new"), "w") as out:
        for name, addresses in names.items() if isinstance(names, Mapping) else names:
            for address in [addresses] if isinstance(addresses, str) else addresses:
                ipaddress.ip_address(address)  # dnsmasq would skip a typo without a word
                out.write(f"{address} {name}\n")
    path.with_suffix(".new").replace(path)


def dnsmasq_available() -> bool:
    return os.access(DNSMASQ, os.X_OK)


def _free_port() -> int:
    """A port free for both UDP and TCP on 127.0.0.1 (dnsmasq listens on both)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind(("127.0.0.1", 0))
            port = tcp.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                try:
                    udp.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port for dnsmasq")


def _answers(port: int) -> bool:
    """Whether something answers DNS on the port (any answer: NXDOMAIN for this name)."""
    import dns.message
    import dns.query

    try:
        dns.query.udp(dns.message.make_query("ready.invalid", "A"), "127.0.0.1", port=port, timeout=0.2)
    except Exception:
        return False
    return True


def start_dnsmasq(
    names: Mapping[str, str | Iterable[str]] | Iterable[tuple[str, str]],
    root: Path,
    *,
    cache_size: int = 10_000,
    local_ttl: int = 0,
    attempts: int = 3,
) -> DnsServer:
    """Start dnsmasq answering for ``names`` from files in ``root``; wait until it answers. Its answers
    carry a TTL of ``local_ttl`` seconds (0, dnsmasq's own default: no client keeps them)."""
    root.mkdir(parents=True, exist_ok=True)
    hosts = root / "hosts"
    write_hosts(hosts, names)
    for attempt in range(attempts):
        port = _free_port()
        log = root / "dnsmasq.log"
        log.unlink(missing_ok=True)
        command = [
            DNSMASQ,
            "--keep-in-foreground",
            "--conf-file=/dev/null",  # not /etc/dnsmasq.conf
            f"--port={port}",
            "--listen-address=127.0.0.1",
            "--bind-interfaces",
            "--no-resolv",  # no upstream servers: nothing leaves the machine
            "--no-poll",
            "--no-hosts",  # not /etc/hosts
            f"--addn-hosts={hosts}",
            "--local=/#/",  # every name not in the hosts file: NXDOMAIN, never forwarded
            f"--cache-size={cache_size}",
            f"--local-ttl={local_ttl}",
            "--dns-forward-max=100000",
            "--pid-file=",  # no pid file
            f"--user={getpass.getuser()}",  # as root, stay root: the files are in a private directory
            f"--log-facility={log}",
        ]
        stderr = root / "dnsmasq.stderr"
        with open(stderr, "w") as errors:
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        server = DnsServer(process, port, root)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and process.poll() is None:
            if _answers(port):
                return server
            time.sleep(0.02)
        server.stop()
        error = stderr.read_text(errors="replace")
        if "in use" not in error or attempt == attempts - 1:
            raise RuntimeError(f"dnsmasq did not start on port {port}: {error}\n{server._log_text()[-2000:]}")
    raise AssertionError("unreachable")


@contextlib.contextmanager
def dns_server(names: Mapping[str, str | Iterable[str]], *, cache_size: int = 10_000) -> Iterator[DnsServer]:
    """dnsmasq answering for ``names`` while the block runs (the test skips without dnsmasq)."""
    from tests.components import require_component

    require_component("dnsmasq", dnsmasq_available(), f"no {DNSMASQ} (Debian package dnsmasq-base)")
    with tempfile.TemporaryDirectory(prefix="dnsmasq-") as directory:
        server = start_dnsmasq(names, Path(directory), cache_size=cache_size)
        try:
            yield server
        finally:
            server.stop()
