"""What a rendered page is made to do before it is read, as a visitor would: scroll, click, play.

Each behaviour is driven from Python in small steps (a short script evaluated
in the page, then a wait until the page's requests have settled), so that
every step is bounded by the behaviour's time and the browser's requests are
served meanwhile. None of them leaves the page: a navigation of the page
itself is refused by the routing (``tab._Visit.route``) and its target
handed to the crawler as a link.

- ``scroll``: down a viewport at a time to the end, so that lazy images and
  IntersectionObserver sentinels fire, and on at the end while the page keeps
  growing (infinite scroll).
- ``click``: in-page controls that load content without leaving the page:
  buttons that submit nothing, tabs, ``<summary>``, links to ``#…`` or to
  ``javascript:``, elements with an ``onclick``; each once, new ones as they
  appear; none whose words say it logs out, deletes or buys.
- ``media``: every ``<video>`` and ``<audio>`` is played (muted), so that its
  file or segments are fetched.
"""

from __future__ import annotations

import time

NAMES = ("scroll", "click", "media")

TEXT = "() => document.body ? document.body.innerText : ''"

LINKS = """(limit) => {
  const out = new Set();
  for (const element of document.querySelectorAll('a[href], area[href]')) {
    if (out.size >= limit) break;
    const href = element.href;
    if (typeof href === 'string' && /^https?:/i.test(href)) out.add(href);
  }
  return Array.from(out);
}"""

_SCROLL_STEP = """() => {
  const root = document.scrollingElement || document.documentElement;
  const before = root.scrollTop;
  window.scrollBy(0, Math.max(200, Math.floor(window.innerHeight * 0.8)));
  return [before, root.scrollTop, root.scrollHeight, window.innerHeight];
}"""

# Marks what was clicked on the element itself, so that a control is clicked once whatever the DOM does.
_CLICKABLES = """() => {
  const selector = [
    'button:not([type=submit]):not([disabled])', '[role=button]', '[role=tab]', 'summary',
    'a[href^="#"]', 'a[href^="javascript:"]', 'a:not([href])[onclick]', '[onclick]',
  ].join(',');
  const avoid = /log ?out|sign ?out|d[ée]connexion|delete|supprimer|remove|buy|acheter|pay|unsubscribe/i;
  let found = 0;
  for (const element of document.querySelectorAll(selector)) {
    if (element.dataset.webarchiveClicked) continue;
    element.dataset.webarchiveClicked = '0';
    if (element.closest('form') && element.matches('button:not([type=button])')) continue;
    const words = (element.innerText || element.getAttribute('aria-label') || '').slice(0, 200);
    if (avoid.test(words)) continue;
    const box = element.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    element.dataset.webarchiveClicked = 'pending';
    found += 1;
  }
  return found;
}"""

_CLICK_NEXT = """() => {
  const element = document.querySelector('[data-webarchive-clicked=pending]');
  if (!element) return false;
  element.dataset.webarchiveClicked = '1';
  element.scrollIntoView({block: 'center'});
  element.click();
  return true;
}"""

_PLAY = """() => {
  let started = 0;
  for (const media of document.querySelectorAll('video, audio')) {
    if (media.dataset.webarchivePlayed) continue;
    media.dataset.webarchivePlayed = '1';
    media.muted = true;
    media.preload = 'auto';
    try { const playing = media.play(); if (playing) playing.catch(() => {}); } catch (error) {}
    started += 1;
  }
  return started;
}"""

_MEDIA_BUSY = """() => Array.from(document.querySelectorAll('video, audio')).some(
  (media) => !media.error && media.networkState === 2 && media.readyState < 4)"""


def sequence(names) -> list[str]:
    """The order behaviours run in: what clicks added is scrolled through again (its lazy images)."""
    order = [name for name in NAMES if name in names]
    if "scroll" in order and "click" in order:
        order.insert(order.index("click") + 1, "scroll")
    return order


def run(name: str, page, visit, seconds: float) -> str:
    """Run the behaviour ``name`` for at most ``seconds``; says how it ended ("done", "time limit"…)."""
    until = time.monotonic() + seconds
    return _BEHAVIOURS[name](page, visit, until)


def _scroll(page, visit, until: float) -> str:
    last_height = -1
    still = 0
    while time.monotonic() < until:
        before, after, height, viewport = page.evaluate(_SCROLL_STEP)
        visit.settle(quiet=0.2, most=max(0.0, min(2.0, until - time.monotonic())))
        at_end = after + viewport >= height - 2
        if at_end and after == before and height == last_height:
            still += 1
            if still >= 2:  # at the end twice with nothing new: the page has nothing more to give
                return "done"
        else:
            still = 0
        last_height = height
    return "time limit"


def _click(page, visit, until: float) -> str:
    clicked = 0
    while time.monotonic() < until:
        page.evaluate(_CLICKABLES)  # marks the controls that appeared since
        if not page.evaluate(_CLICK_NEXT):
            return f"done ({clicked} clicked)"
        clicked += 1
        visit.settle(quiet=0.2, most=max(0.0, min(2.0, until - time.monotonic())))
    return f"time limit ({clicked} clicked)"


def _media(page, visit, until: float) -> str:
    played = page.evaluate(_PLAY)
    if not played:
        return "done (no media)"
    while time.monotonic() < until:
        visit.settle(quiet=0.3, most=max(0.0, min(2.0, until - time.monotonic())))
        if not page.evaluate(_MEDIA_BUSY):
            return f"done ({played} played)"
    return f"time limit ({played} played)"


_BEHAVIOURS = {"scroll": _scroll, "click": _click, "media": _media}
