"""How the processes log: one line for what a person did wrong, a traceback only for what broke.

Django logs every 4xx answer on ``django.request`` with the exception that made it: a page someone
may not open (403) or that does not exist (404) came out as a traceback, and twice when Django's
own console handler (DEBUG) and the root handler both printed it. Here a client error is one line
(method, path, status, and why), and Django's records go to the root handler only.
"""

from __future__ import annotations

import logging


class ClientErrorsOnOneLine(logging.Filter):
    """Drop the traceback of a ``django.request`` record whose answer was a client error (4xx)."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if status is not None and 400 <= status < 500 and record.exc_info:
            reason = record.exc_info[1]
            if reason is not None and str(reason):
                record.msg = f"{record.msg} ({type(reason).__name__}: {reason})"
            record.exc_info = None
            record.exc_text = None
        return True
