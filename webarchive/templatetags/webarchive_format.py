"""Template filters that say values the way people read them."""

from __future__ import annotations

from datetime import timedelta

from django import template
from django.utils import timezone
from django.utils.timesince import timeuntil

from webarchive.urlnorm import unicode_url as _unicode_url

register = template.Library()


@register.filter
def duration(value: timedelta | None) -> str:
    """A length of time in words, in the page's language: "15 minutes", "1 hour, 30 minutes"."""
    if not isinstance(value, timedelta):
        return ""
    now = timezone.now()
    return timeuntil(now + value, now, depth=2)


@register.filter
def unicode_url(value: str) -> str:
    """A stored URL with an internationalised host name in Unicode (``café.fr``, not ``xn--caf-dma.fr``)."""
    return _unicode_url(value or "")
