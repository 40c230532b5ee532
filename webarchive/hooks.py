"""Calls that go up a layer: declared by the app below, provided by the app above.

Imports point down (selection ← harvest ← storage, see docs/development.md). When an app needs
something only an app above it can do — the crawl worker hands the WARC files it closes to storage,
a record's page shows what became of its harvests — the app below declares a :class:`Hook` (in its
``hooks.py``) and calls it; the app above provides it in its ``AppConfig.ready()``. That is the one
way up: no import, and the hook's declaration says what is asked and what is answered when no app
provides it (an installation without the app above, or a test of the app below alone).

A hook has any number of providers, called in the order they were connected:
:meth:`Hook.call` is for a question with one answer (the first provider answers), :meth:`Hook.collect`
for an event or a page's panels (every provider's answer, in order).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class HookNotProvided(LookupError):
    """A hook that has no provider and no default was called."""


class Hook:
    """A named call point; see the module's docstring."""

    def __init__(self, name: str, *, default: Callable[..., Any] | None = None, doc: str = ""):
        self.name = name
        self.default = default
        self.__doc__ = doc or f"Hook {name}."
        self._providers: list[Callable[..., Any]] = []

    def __repr__(self) -> str:
        return f"<Hook {self.name}: {len(self._providers)} provider(s)>"

    def provide(self, provider: Callable[..., Any]) -> Callable[..., Any]:
        """Connect ``provider`` (once: connected twice, it is called once). Usable as a decorator."""
        if provider not in self._providers:
            self._providers.append(provider)
        return provider

    def call(self, *args, **kwargs) -> Any:
        """The first provider's answer, or the default's; :class:`HookNotProvided` if there is neither."""
        if self._providers:
            return self._providers[0](*args, **kwargs)
        if self.default is not None:
            return self.default(*args, **kwargs)
        raise HookNotProvided(f"No app provides the hook {self.name!r} (is the app above installed?).")

    def collect(self, *args, **kwargs) -> list[Any]:
        """Every provider's answer, in the order they were connected (none: an empty list)."""
        return [provider(*args, **kwargs) for provider in self._providers]
