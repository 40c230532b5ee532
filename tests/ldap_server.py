"""A throwaway OpenLDAP server for the LDAP login tests.

``ldap_server`` (session-scoped) writes a slapd.conf and an LDIF into a pytest
temporary directory, loads the LDIF with slapadd, starts slapd in the
foreground listening on 127.0.0.1 only (on a free port), waits until it
answers, and stops it at the end of the session. Without slapd or python-ldap
the tests that use it skip (fail under CI, see ``tests.components``).

The directory (``BASE_DN`` = dc=example,dc=org):

- ``cn=admin``: the rootdn, used by the tests to change the directory;
- ``ou=services/cn=webarchive``: the read-only account the application binds as;
- ``ou=people``: the users of ``USERS``, each with the password ``password_for(uid)``;
- ``ou=groups``: one groupOfNames per entry of ``GROUPS``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.util
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.components import require_component

SLAPD = "/usr/sbin/slapd"
SLAPADD = "/usr/sbin/slapadd"
MODULE_PATH = "/usr/lib/ldap"
SCHEMA_DIR = Path("/etc/ldap/schema")
SCHEMAS = ("core", "cosine", "nis", "inetorgperson")

BASE_DN = "dc=example,dc=org"
ADMIN_DN = f"cn=admin,{BASE_DN}"
ADMIN_PASSWORD = "admin-secret"  # a throwaway directory
SERVICE_DN = f"cn=webarchive,ou=services,{BASE_DN}"
# Starts with "$" on purpose: django-environ reads such a value as the name of
# another variable; the application must take the password as it is.
SERVICE_PASSWORD = "$ervice-secret"
PEOPLE_DN = f"ou=people,{BASE_DN}"
GROUPS_DN = f"ou=groups,{BASE_DN}"

# uid -> (givenName, sn, mail)
USERS: dict[str, tuple[str, str, str]] = {
    "alice": ("Alice", "Archer", "alice@example.org"),  # librarians
    "bob": ("Bob", "Baker", "bob@example.org"),  # engineers
    "carol": ("Carol", "Carter", "carol@example.org"),  # curators, managers
    "dave": ("Dave", "Dalton", "dave@example.org"),  # no group
    "erin": ("Erin", "Evans", "erin@example.org"),  # admins
    "frank": ("Frank", "Fischer", "frank@example.org"),  # librarians, curators (moved during a test)
    "grace": ("Grace", "Garnier", "grace@example.org"),  # librarians (attributes changed during a test)
    "heidi": ("Heidi", "Hopper", "heidi@example.org"),  # admins, engineers (moved during a test)
    "ivan": ("Ivan", "Ivanov", "ivan@example.org"),  # librarians (failed logins)
    "judy": ("Judy", "Jensen", "judy@example.org"),  # readers
}

# group cn -> member uids
GROUPS: dict[str, tuple[str, ...]] = {
    "librarians": ("alice", "frank", "grace", "ivan"),
    "curators": ("carol", "frank"),
    "engineers": ("bob", "heidi"),
    "managers": ("carol",),
    "readers": ("judy",),
    "admins": ("erin", "heidi"),
}


def password_for(uid: str) -> str:
    return f"{uid}-pw-{uid[::-1]}"


def user_dn(uid: str) -> str:
    return f"uid={uid},{PEOPLE_DN}"


def group_dn(cn: str) -> str:
    return f"cn={cn},{GROUPS_DN}"


def ssha(password: str) -> str:
    """A {SSHA} userPassword value, as slappasswd makes them."""
    salt = os.urandom(8)
    digest = hashlib.sha1(password.encode() + salt).digest()  # SSHA is SHA-1 by definition
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


def directory_ldif() -> str:
    entries = [
        f"dn: {BASE_DN}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n",
        f"dn: ou=services,{BASE_DN}\nobjectClass: organizationalUnit\nou: services\n",
        (
            f"dn: {SERVICE_DN}\nobjectClass: applicationProcess\nobjectClass: simpleSecurityObject\n"
            f"cn: webarchive\nuserPassword: {ssha(SERVICE_PASSWORD)}\n"
        ),
        f"dn: {PEOPLE_DN}\nobjectClass: organizationalUnit\nou: people\n",
        f"dn: {GROUPS_DN}\nobjectClass: organizationalUnit\nou: groups\n",
    ]
    for uid, (given, sn, mail) in USERS.items():
        entries.append(
            f"dn: {user_dn(uid)}\nobjectClass: inetOrgPerson\nuid: {uid}\n"
            f"cn: {given} {sn}\ngivenName: {given}\nsn: {sn}\nmail: {mail}\n"
            f"userPassword: {ssha(password_for(uid))}\n"
        )
    for cn, members in GROUPS.items():
        lines = [f"dn: {group_dn(cn)}", "objectClass: groupOfNames", f"cn: {cn}"]
        lines += [f"member: {user_dn(uid)}" for uid in members]
        entries.append("\n".join(lines) + "\n")
    return "\n".join(entries)


def slapd_conf(root: Path) -> str:
    includes = "\n".join(f"include {SCHEMA_DIR / name}.schema" for name in SCHEMAS)
    return f"""\
{includes}
modulepath {MODULE_PATH}
moduleload back_mdb
pidfile {root / "slapd.pid"}
argsfile {root / "slapd.args"}

database mdb
maxsize 16777216
suffix "{BASE_DN}"
rootdn "{ADMIN_DN}"
rootpw {ssha(ADMIN_PASSWORD)}
directory {root / "db"}
index objectClass eq
index uid eq
index member eq

access to attrs=userPassword
    by self write
    by anonymous auth
    by * none
access to *
    by users read
    by * none
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LdapServer:
    """A running slapd; ``connect()`` gives a connection bound as the directory admin."""

    uri: str
    process: subprocess.Popen
    root: Path
    base_dn: str = BASE_DN
    admin_dn: str = ADMIN_DN
    admin_password: str = ADMIN_PASSWORD
    bind_dn: str = SERVICE_DN
    bind_password: str = SERVICE_PASSWORD
    people_dn: str = PEOPLE_DN
    groups_dn: str = GROUPS_DN

    def connect(self, who: str | None = None, password: str | None = None):
        import ldap

        conn = ldap.initialize(self.uri)
        conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 5)
        conn.set_option(ldap.OPT_TIMEOUT, 5)
        conn.simple_bind_s(who or self.admin_dn, self.admin_password if password is None else password)
        return conn

    def modify(self, dn: str, changes: list[tuple]) -> None:
        """Apply python-ldap modlist ``changes`` to ``dn`` as the directory admin."""
        conn = self.connect()
        try:
            conn.modify_s(dn, changes)
        finally:
            conn.unbind_s()

    def add_member(self, group: str, uid: str) -> None:
        import ldap

        self.modify(group_dn(group), [(ldap.MOD_ADD, "member", [user_dn(uid).encode()])])

    def remove_member(self, group: str, uid: str) -> None:
        import ldap

        self.modify(group_dn(group), [(ldap.MOD_DELETE, "member", [user_dn(uid).encode()])])

    def replace_attr(self, uid: str, attr: str, value: str) -> None:
        import ldap

        self.modify(user_dn(uid), [(ldap.MOD_REPLACE, attr, [value.encode()])])

    def attr(self, uid: str, attr: str) -> list[str]:
        import ldap

        conn = self.connect()
        try:
            [(_dn, attrs)] = conn.search_s(user_dn(uid), ldap.SCOPE_BASE, attrlist=[attr])
        finally:
            conn.unbind_s()
        return [v.decode() for v in attrs.get(attr, [])]

    def members(self, group: str) -> set[str]:
        import ldap

        conn = self.connect()
        try:
            [(_dn, attrs)] = conn.search_s(group_dn(group), ldap.SCOPE_BASE, attrlist=["member"])
        finally:
            conn.unbind_s()
        return {v.decode() for v in attrs.get("member", [])}


def _log_tail(root: Path) -> str:
    log = root / "slapd.log"
    return log.read_text(errors="replace")[-3000:] if log.exists() else ""


def _wait_until_answering(server: LdapServer, timeout: float = 10.0) -> None:
    import ldap

    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"slapd exited with {server.process.returncode} at start:\n{_log_tail(server.root)}"
            )
        try:
            conn = server.connect()
            conn.whoami_s()
            conn.unbind_s()
            return
        except ldap.LDAPError as error:
            last_error = error
            time.sleep(0.05)
    raise RuntimeError(f"slapd did not answer within {timeout}s ({last_error}):\n{_log_tail(server.root)}")


def stop(process: subprocess.Popen) -> None:
    """Terminate slapd, then kill it if it does not stop."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


def start_slapd(root: Path, attempts: int = 3) -> LdapServer:
    """Write the configuration, load the directory and start slapd on 127.0.0.1."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "db").mkdir(exist_ok=True)
    conf = root / "slapd.conf"
    conf.write_text(slapd_conf(root))
    ldif = root / "directory.ldif"
    ldif.write_text(directory_ldif())
    loaded = subprocess.run(
        [SLAPADD, "-q", "-f", str(conf), "-l", str(ldif)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if loaded.returncode != 0:
        raise RuntimeError(f"slapadd failed ({loaded.returncode}):\n{loaded.stdout}{loaded.stderr}")

    for attempt in range(attempts):
        uri = f"ldap://127.0.0.1:{free_port()}/"
        with open(root / "slapd.log", "w") as log:
            # -d keeps slapd in the foreground, so that this process is slapd itself.
            process = subprocess.Popen(
                [SLAPD, "-f", str(conf), "-h", uri, "-d", "0"],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        server = LdapServer(uri=uri, process=process, root=root)
        try:
            _wait_until_answering(server)
            return server
        except RuntimeError:
            stop(process)
            if attempt == attempts - 1:
                raise  # the port was not taken meanwhile: a real failure
    raise AssertionError("unreachable")


def require_slapd() -> None:
    require_component(
        "python-ldap",
        importlib.util.find_spec("ldap") is not None,
        "pip install -r requirements-ldap.txt (needs libldap2-dev libsasl2-dev)",
    )
    have_slapd = all(Path(p).is_file() and os.access(p, os.X_OK) for p in (SLAPD, SLAPADD))
    have_mdb = Path(MODULE_PATH, "back_mdb.so").exists()
    require_component(
        "slapd",
        have_slapd and have_mdb and all((SCHEMA_DIR / f"{s}.schema").exists() for s in SCHEMAS),
        f"{SLAPD}, {SLAPADD}, {MODULE_PATH}/back_mdb.so and the schemas of {SCHEMA_DIR} "
        "(Debian: apt-get install slapd ldap-utils)",
    )


@pytest.fixture(scope="session")
def ldap_server(tmp_path_factory) -> Iterator[LdapServer]:
    """A running slapd with the directory above, for the whole test session."""
    require_slapd()
    server = start_slapd(tmp_path_factory.mktemp("slapd"))
    try:
        yield server
    finally:
        stop(server.process)


@contextlib.contextmanager
def restored_groups(server: LdapServer, *groups: str):
    """Put the members of these groups back as they were, whatever the test did."""
    before = {group: server.members(group) for group in groups}
    try:
        yield
    finally:
        import ldap

        for group, members in before.items():
            server.modify(group_dn(group), [(ldap.MOD_REPLACE, "member", [m.encode() for m in members])])
