"""The online check of a proposed URL: DNS, then HTTP with each redirect hop shown.

Contract used by selection.services (keep it stable):

- ``check_url(url, *, allow_private=None, timeout=None, max_redirects=None) -> UrlCheckResult``
  takes a URL already normalised by ``webarchive.urlnorm.normalise_url``, never
  raises for network trouble (it reports it), and refuses loopback, private,
  link-local, reserved and cloud-metadata addresses, for the first URL and
  after every redirect, unless ``allow_private`` (default: the setting
  ``WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES``) is true — cloud-metadata addresses
  (169.254.169.254…) stay refused even then (webarchive.netguard).
- ``UrlCheckResult.status`` is a ``selection.choices.CheckStatus``:
  OK (a 2xx at the end, no redirect), REDIRECT (3xx hops then a 2xx; ``final_url``
  is where it ends), INVALID (4xx/5xx at the end, or no DNS entry),
  UNREACHABLE (timeout, TLS failure, connection refused, too many redirects or a
  loop, a DNS lookup that fails for another reason than a missing entry),
  REFUSED (an address that is not allowed).
- ``as_dict()``/``from_dict()`` round-trip through JSON (stored on the record).

How it works: each hop resolves its host first (and records the addresses),
refuses it if any address is not allowed, then sends one GET (with the
``SELECTION_URL_CHECK_USER_AGENT``, ``allow_redirects=False``, streamed: only
the headers are read, the body never is). The connection goes through
:class:`webarchive.netguard.GuardedAdapter` pinned to the addresses just
checked, so a DNS answer that changes between the check and the connection
(DNS rebinding) cannot lead anywhere else. Redirects are followed here, one
hop at a time, each one checked the same way. A redirect that leads back to a
URL already asked for, with the same cookies, is a loop and ends the check at
once (with other cookies it is followed: "set a cookie and come back" is a
common pattern); otherwise ``max_redirects`` ends it.

:func:`run_check` is the same check with an explicit
:class:`~webarchive.netguard.AddressPolicy`: the tests use it to allow the
test website's address only, and so check that the redirects that follow are
refused.
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import asdict, dataclass, field
from http import HTTPStatus
from urllib.parse import urljoin, urlsplit

import requests
from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from selection.choices import CheckStatus
from webarchive.addresses import address_policy
from webarchive.netguard import (
    AddressPolicy,
    AddressRefused,
    GuardedAdapter,
    ResolutionTimeout,
    error_causes,
    is_ip_literal,
    resolve,
)
from webarchive.urlnorm import InvalidURL, normalise_url


@dataclass
class Hop:
    """One request of the check: the URL asked for and what answered."""

    url: str
    status_code: int | None = None
    location: str = ""  # the Location header of a redirect
    addresses: list[str] = field(default_factory=list)  # what the host name resolved to
    elapsed_ms: int | None = None
    error: str = ""


@dataclass
class UrlCheckResult:
    """What the check found; ``message`` is one sentence for the librarian."""

    url: str
    status: str
    message: str
    hops: list[Hop] = field(default_factory=list)
    final_url: str = ""
    checked_at: str = ""  # ISO 8601

    @property
    def selectable(self) -> bool:
        return self.status in CheckStatus.selectable()

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> UrlCheckResult:
        hops = [Hop(**hop) for hop in data.get("hops", [])]
        return cls(**{**data, "hops": hops})


def check_url(
    url: str,
    *,
    allow_private: bool | None = None,
    timeout: float | None = None,
    max_redirects: int | None = None,
) -> UrlCheckResult:
    """Check ``url`` online; see the module documentation. Never raises for network trouble."""
    return run_check(
        url,
        policy=address_policy(allow_private=allow_private),
        timeout=timeout,
        max_redirects=max_redirects,
    )


def run_check(
    url: str,
    *,
    policy: AddressPolicy,
    timeout: float | None = None,
    max_redirects: int | None = None,
    total_timeout: float | None = None,
) -> UrlCheckResult:
    """:func:`check_url` with the addresses allowed by ``policy``, for every hop.

    ``timeout`` bounds each lookup and request; ``total_timeout`` the whole
    check, so that a chain of slow redirects cannot hold a web request for
    ``timeout`` times ``max_redirects``.
    """
    timeout = settings.SELECTION_URL_CHECK_TIMEOUT if timeout is None else timeout
    max_redirects = settings.SELECTION_URL_CHECK_MAX_REDIRECTS if max_redirects is None else max_redirects
    total = settings.SELECTION_URL_CHECK_TOTAL_TIMEOUT if total_timeout is None else total_timeout
    check = _Check(url, policy=policy, timeout=float(timeout), max_redirects=int(max_redirects))
    check.deadline = time.monotonic() + float(total)
    check.total_seconds = f"{float(total):g}"
    return check.run()


class _Ended(Exception):
    """The check is over; carries the status and the message."""

    def __init__(self, status: str, message: str, final_url: str = ""):
        super().__init__(message)
        self.status = status
        self.message = message
        self.final_url = final_url


class _Check:
    def __init__(self, url: str, *, policy: AddressPolicy, timeout: float, max_redirects: int):
        self.url = url
        self.policy = policy
        self.timeout = timeout
        self.max_redirects = max_redirects
        self.hops: list[Hop] = []
        self.resolved: dict[str, list[str]] = {}  # host → the addresses checked, the only ones connected to
        self.seconds = f"{timeout:g}"
        self.deadline = float("inf")
        self.total_seconds = ""

    def run(self) -> UrlCheckResult:
        try:
            status, message, final_url = self._follow()
        except _Ended as ended:
            status, message, final_url = ended.status, ended.message, ended.final_url
            redirects = len(self.hops) - 1
            if redirects > 0:
                message = f"{message} " + ngettext(
                    "(At %(url)s, after %(count)d redirect.)",
                    "(At %(url)s, after %(count)d redirects.)",
                    redirects,
                ) % {"url": self.hops[-1].url, "count": redirects}
        return UrlCheckResult(
            url=self.url,
            status=status,
            message=message,
            hops=self.hops,
            final_url=final_url,
            checked_at=timezone.now().isoformat(),
        )

    def _follow(self) -> tuple[str, str, str]:
        try:
            current = normalise_url(self.url)
        except InvalidURL as error:
            raise _Ended(CheckStatus.INVALID, str(error)) from error
        asked: set[tuple[str, tuple]] = set()
        with requests.Session() as session:
            session.trust_env = False  # no proxy from the environment: it would resolve names itself
            session.verify = settings.SELECTION_URL_CHECK_CA_BUNDLE or True
            adapter = GuardedAdapter(self.policy, resolver=self._pinned, max_retries=0)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            while True:
                if time.monotonic() > self.deadline:
                    raise _Ended(
                        CheckStatus.UNREACHABLE,
                        _("The check took longer than %(seconds)s s.") % {"seconds": self.total_seconds},
                    )
                asked.add((current, _cookie_state(session)))
                hop = Hop(url=current)
                self.hops.append(hop)
                self._check_addresses(hop)
                status_code, location = self._get(session, hop)
                if 300 <= status_code < 400 and location:
                    following = self._redirect_target(current, location)
                    redirects = len(self.hops)
                    if (following, _cookie_state(session)) in asked:
                        raise _Ended(
                            CheckStatus.UNREACHABLE,
                            _("The redirects go round in a loop (back to %(url)s).") % {"url": following},
                        )
                    if redirects > self.max_redirects:
                        raise _Ended(
                            CheckStatus.UNREACHABLE,
                            ngettext(
                                "More than %(max)d redirect.",
                                "More than %(max)d redirects.",
                                self.max_redirects,
                            )
                            % {"max": self.max_redirects},
                        )
                    current = following
                    continue
                answer = _status_text(status_code)
                if 200 <= status_code < 300:
                    if len(self.hops) == 1:
                        return (
                            CheckStatus.OK,
                            _("The server answered %(status)s.") % {"status": answer},
                            current,
                        )
                    redirects = len(self.hops) - 1
                    message = ngettext(
                        "It redirects to %(url)s, which answers %(status)s (%(count)d redirect).",
                        "It redirects to %(url)s, which answers %(status)s (%(count)d redirects).",
                        redirects,
                    ) % {"url": current, "status": answer, "count": redirects}
                    return CheckStatus.REDIRECT, message, current
                if status_code >= 400:
                    raise _Ended(
                        CheckStatus.INVALID, _("The server answered %(status)s.") % {"status": answer}
                    )
                raise _Ended(
                    CheckStatus.INVALID,
                    _("The server answered %(status)s, which does not lead to a page.") % {"status": answer},
                )

    def _check_addresses(self, hop: Hop) -> None:
        """Resolve the hop's host and refuse it if any of its addresses is not allowed."""
        parts = urlsplit(hop.url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if is_ip_literal(host):
            addresses = [host]
        else:
            try:
                addresses = resolve(host, port, timeout=self.timeout)
            except ResolutionTimeout as error:
                hop.error = str(error)
                raise _Ended(
                    CheckStatus.UNREACHABLE,
                    _("No DNS answer for %(host)s within %(seconds)s s.")
                    % {"host": host, "seconds": self.seconds},
                ) from error
            except socket.gaierror as error:
                hop.error = str(error)
                if error.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)):
                    raise _Ended(
                        CheckStatus.INVALID, _("No DNS entry for %(host)s.") % {"host": host}
                    ) from error
                raise _Ended(
                    CheckStatus.UNREACHABLE,
                    _("The DNS lookup of %(host)s failed (%(error)s).")
                    % {"host": host, "error": error.strerror},
                ) from error
            except (UnicodeError, OSError) as error:
                hop.error = str(error)
                raise _Ended(CheckStatus.INVALID, _("No DNS entry for %(host)s.") % {"host": host}) from error
        hop.addresses = addresses
        self.resolved[host.lower()] = addresses
        for address in addresses:
            reason = self.policy.refusal(address)
            if reason:
                hop.error = reason
                raise _Ended(CheckStatus.REFUSED, _refusal_message(host, address, reason))

    def _pinned(self, host: str, port: int) -> list[str]:
        """The adapter's resolver: the addresses this check resolved and checked for ``host``."""
        addresses = self.resolved.get(host.lower())
        if addresses is None:  # not expected: resolve again (the adapter checks them all the same)
            addresses = resolve(host, port, timeout=self.timeout)
        return addresses

    def _get(self, session: requests.Session, hop: Hop) -> tuple[int, str]:
        host = urlsplit(hop.url).hostname or ""
        started = time.monotonic()
        try:
            response = session.get(
                hop.url,
                allow_redirects=False,
                stream=True,
                timeout=self.timeout,
                headers={"User-Agent": settings.SELECTION_URL_CHECK_USER_AGENT},
            )
        except AddressRefused as error:  # only if the name changed its addresses under us
            hop.error = error.reason
            raise _Ended(
                CheckStatus.REFUSED, _refusal_message(error.host, error.address, error.reason)
            ) from error
        except requests.exceptions.SSLError as error:
            hop.error = str(error)
            raise _Ended(
                CheckStatus.UNREACHABLE,
                _("The secure connection to %(host)s failed: %(reason)s.")
                % {"host": host, "reason": _tls_reason(error)},
            ) from error
        except requests.exceptions.Timeout as error:
            hop.error = str(error)
            raise _Ended(
                CheckStatus.UNREACHABLE,
                _("No answer within %(seconds)s s from %(host)s.") % {"seconds": self.seconds, "host": host},
            ) from error
        except (requests.exceptions.RequestException, OSError, ValueError) as error:
            hop.error = str(error)
            raise _Ended(CheckStatus.UNREACHABLE, _connection_message(error, hop.url)) from error
        finally:
            hop.elapsed_ms = round((time.monotonic() - started) * 1000)
        with response:  # closes the connection without reading the body
            hop.status_code = response.status_code
            hop.location = response.headers.get("Location", "")
        return hop.status_code, hop.location

    def _redirect_target(self, current: str, location: str) -> str:
        target = urljoin(current, location.strip())
        try:
            return normalise_url(target)
        except InvalidURL as error:
            raise _Ended(
                CheckStatus.INVALID,
                _("It redirects to “%(url)s”, which cannot be harvested: %(error)s")
                % {"url": target, "error": error},
            ) from error


def _cookie_state(session: requests.Session) -> tuple:
    return tuple(sorted((c.domain, c.path, c.name, c.value or "") for c in session.cookies))


def _status_text(status_code: int) -> str:
    try:
        return f"{status_code} {HTTPStatus(status_code).phrase}"
    except ValueError:
        return str(status_code)


def _refusal_message(host: str, address: str, reason: str) -> str:
    if is_ip_literal(host):
        return _("%(address)s is %(reason)s: the archive does not connect to it.") % {
            "address": address,
            "reason": reason,
        }
    return _("%(host)s resolves to %(address)s, %(reason)s: the archive does not connect to it.") % {
        "host": host,
        "address": address,
        "reason": reason,
    }


def _find(error: BaseException, kind: type[BaseException]) -> BaseException | None:
    return next((cause for cause in error_causes(error) if isinstance(cause, kind)), None)


# OpenSSL's certificate verification codes (X509_V_ERR_*) that a librarian meets, in words.
_CERTIFICATE_PROBLEMS = {
    62: "name",  # hostname mismatch
    64: "name",  # IP address mismatch
    10: "expired",
    9: "not_yet_valid",
    18: "self_signed",
    19: "self_signed",
    2: "unknown_issuer",
    20: "unknown_issuer",
    21: "unknown_issuer",
    23: "revoked",
}


def _tls_reason(error: BaseException) -> str:
    """Why the secure connection failed, in words (the technical text stays in the hop's ``error``)."""
    found = _find(error, ssl.SSLError)
    if isinstance(found, ssl.SSLCertVerificationError):
        problem = _CERTIFICATE_PROBLEMS.get(found.verify_code, "")
        return {
            "name": _("the site's certificate is not valid for this name"),
            "expired": _("the site's certificate has expired"),
            "not_yet_valid": _("the site's certificate is not valid yet (or the site's clock is wrong)"),
            "self_signed": _(
                "the site's certificate is self-signed: no certification authority vouches for it"
            ),
            "unknown_issuer": _(
                "the site's certificate is not signed by a known certification authority "
                "(or the site does not send its intermediate certificates)"
            ),
            "revoked": _("the site's certificate has been revoked"),
        }.get(problem, _("the site's certificate could not be verified"))
    return _("the site does not speak HTTPS on this port, or refused the secure connection")


def _connection_message(error: BaseException, url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if _find(error, ConnectionRefusedError):
        return _("%(host)s refused the connection on port %(port)d.") % {"host": host, "port": port}
    if _find(error, ConnectionResetError) or _find(error, ConnectionAbortedError):
        return _("%(host)s closed the connection without answering.") % {"host": host}
    if _find(error, requests.exceptions.ConnectionError) and "RemoteDisconnected" in repr(error):
        return _("%(host)s closed the connection without answering.") % {"host": host}
    if _find(error, requests.exceptions.TooManyRedirects):
        return _("%(host)s redirects too many times.") % {"host": host}
    if _find(error, requests.exceptions.InvalidHeader) or "BadStatusLine" in repr(error):
        return _("%(host)s answered something that is not a web page (not HTTP).") % {"host": host}
    return _("Could not get an answer from %(host)s: the connection failed.") % {"host": host}
