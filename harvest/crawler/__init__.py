"""The site crawler: level 2 of the INA design (level 1, the scheduler of websites, is the launcher).

Plain Python, no Django: it can be tested and benchmarked alone. The parts:

- ``urls`` — canonical URLs, session ids, fingerprints; ``scope`` — depth policies, accept/reject
  rules and crawler traps; ``traps`` — repeated paths, parameter explosions, calendars;
- ``extractors`` — links from HTML, CSS, JavaScript, sitemaps, text and headers (one plug-in each);
- ``fetch`` — HTTP through the address guard, one kept-alive connection per host, bodies as sent;
- ``warc`` — WARC/1.1 writing (gzip per record, rolled files, recovery of torn files);
- ``frontier``, ``robots``, ``site`` — one site crawl, one URL per step;
- ``engine`` — many site crawls on a few fetch threads; ``crawllog`` — the crawl log;
- ``defaults`` — each default value, which the deployment's settings take; ``outcomes`` — stop reasons
  and error codes, which ``harvest.choices`` and the monitoring page read.

It imports from the rest of the project only the plain-Python ``webarchive.netguard`` (the address
guard); ``tests/crawler/test_plain_python.py`` checks that it loads no Django, Celery or app.

``harvest.worker`` and ``harvest.tasks`` wrap it for Celery; ``manage.py crawl`` runs it by hand.
"""
