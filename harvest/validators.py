"""Validation of the planning side's text inputs: domain names, seed lists, crawler traps.

Each validator raises a ``ValidationError`` whose message says exactly what is
wrong and, for multi-line inputs, on which line.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re

import idna
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from webarchive.patterns import PatternError, compile_user_pattern
from webarchive.urlnorm import InvalidURL, _extractor, normalise_url

_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


def domain_name_normalise(value: str) -> str:
    """The stored form of a registered domain name (lower case, punycode), or why it is refused."""
    text = (value or "").strip().lower().rstrip(".")
    if not text:
        raise ValidationError(_("Enter a domain name."), code="required")
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        pass
    else:
        # A site served at an address has no name: its address is its domain.
        return str(ipaddress.ip_address(text.strip("[]")))
    if "/" in text or ":" in text or any(ch.isspace() for ch in text):
        hint = ""
        with contextlib.suppress(InvalidURL, ValidationError, IndexError):
            hint = _(" The domain of this URL is %(domain)s.") % {
                "domain": _registered(normalise_url(text).split("/")[2].split(":")[0])
            }
        raise ValidationError(
            _(
                "“%(value)s” is not a domain name: enter a name such as example.fr, "
                "without scheme, path or port."
            )
            % {"value": value.strip()}
            + hint,
            code="not_a_domain",
        )
    try:
        text = idna.encode(text, uts46=True).decode("ascii")
    except idna.IDNAError as error:
        raise ValidationError(
            _("“%(value)s” is not a valid domain name (%(error)s).")
            % {"value": value.strip(), "error": error},
            code="invalid",
        ) from error
    if any(not _LABEL.match(label) for label in text.split(".")):
        raise ValidationError(_("“%(value)s” is not a valid domain name.") % {"value": value.strip()})
    return _registered(text, exact=True)


def _registered(host: str, *, exact: bool = False) -> str:
    extracted = _extractor()(host)
    if not extracted.suffix:
        raise ValidationError(
            _(
                "%(value)s does not end with a public suffix (such as .fr or .co.uk) "
                "known to the public suffix list."
            )
            % {"value": host},
            code="no_suffix",
        )
    if not extracted.domain:
        raise ValidationError(
            _(
                "%(value)s is a public suffix, not a domain: a domain is a name registered "
                "under it, such as example.%(value)s."
            )
            % {"value": host},
            code="public_suffix",
        )
    domain = f"{extracted.domain}.{extracted.suffix}"
    if exact and extracted.subdomain:
        raise ValidationError(
            _("%(value)s is a host, the domain is %(domain)s.") % {"value": host, "domain": domain},
            code="host",
        )
    return domain


def meaningful_lines(text: str) -> list[tuple[int, str]]:
    """(line number, content) of the lines that are neither empty nor ``#`` comments."""
    lines = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        content = line.strip()
        if content and not content.startswith("#"):
            lines.append((number, content))
    return lines


def validate_trap_lines(text: str) -> None:
    """Each crawler trap or accept/reject rule (one regular expression per line) must be one RE2 can run.

    RE2 is what the crawler matches them with (see :mod:`webarchive.patterns`): in time proportional
    to the URL; back-references and look-around are refused here, with the reason.
    """
    errors = []
    for number, pattern in meaningful_lines(text):
        try:
            compile_user_pattern(pattern)
        except PatternError as error:
            errors.append(
                ValidationError(
                    _("Line %(line)d: %(error)s") % {"line": number, "error": error}, code="invalid_trap"
                )
            )
    if errors:
        raise ValidationError(errors)


def trap_list(text: str) -> list[str]:
    """The regular expressions of a trap field, in order."""
    return [pattern for _number, pattern in meaningful_lines(text)]


def validate_seed_lines(text: str) -> None:
    """Each seed (one URL per line) must be a URL the crawler can fetch; a list needs one seed."""
    errors = []
    lines = meaningful_lines(text)
    for number, url in lines:
        try:
            normalise_url(url)
        except InvalidURL as error:
            errors.append(
                ValidationError(
                    _("Line %(line)d: %(error)s") % {"line": number, "error": error}, code="invalid_seed"
                )
            )
    if errors:
        raise ValidationError(errors)
    if not lines:
        raise ValidationError(_("A seed list needs at least one URL."), code="empty")


def seed_list(text: str) -> list[str]:
    """The seed URLs of a seed list, without duplicates, in order.

    Seed lists are stored normalised (:func:`seeds_normalise`, applied by the
    services), so reading one is only parsing: the launcher reads millions.
    """
    urls: dict[str, None] = {}  # meaningful_lines without the line numbers: the launcher reads millions
    for line in (text or "").splitlines():
        content = line.strip()
        if content and content[0] != "#":
            urls[content] = None
    return list(urls)


def seeds_normalise(text: str) -> str:
    """A seed list with each URL line in its stored form; comments, blank lines and bad lines as they are."""
    lines = []
    for line in (text or "").splitlines():
        content = line.strip()
        if content and not content.startswith("#"):
            with contextlib.suppress(InvalidURL):  # validate_seed_lines says why
                content = normalise_url(content)
        lines.append(content)
    return "\n".join(lines)


def is_address(name: str) -> bool:
    """Whether a domain is an IP address (a site served without a name)."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
