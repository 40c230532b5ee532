"""The project's synthetic test website, served from the standard library on 127.0.0.1.

Used by the tests (the ``testsite`` fixture) and by hand (``manage.py testsite``)
to exercise the URL check and, later, the crawler, without the internet.
``server.py`` is the machinery (router, request, responses, :class:`TestSite`);
``pages.py`` holds the hand-written pages; ``generated.py`` the generated
website under ``/site/`` (with ``markup.py``, ``sitetext.py``, ``assets.py``)
and ``groundtruth.py`` what a crawl of it must capture.
"""

from webarchive.testsite.server import HOST, HOSTS, Request, Response, Router, TestSite

__all__ = ["HOST", "HOSTS", "Request", "Response", "Router", "TestSite"]
