"""The project's synthetic test website, served from the standard library on 127.0.0.1.

Used by the tests (the ``testsite`` fixture) and by hand (``manage.py testsite``)
to exercise the URL check and, later, the crawler, without the internet.
``server.py`` is the machinery (router, request, responses, :class:`TestSite`);
``pages.py`` holds the pages.
"""

from webarchive.testsite.server import HOST, Request, Response, Router, TestSite

__all__ = ["HOST", "Request", "Response", "Router", "TestSite"]
