"""Where the Hub client's chatter goes: the log, not stderr.

huggingface_hub logs every retry ("Retrying in 1s [Retry 1/5]", ``utils/_http.py:551-564``) as a warning
through its own stderr handler (``utils/logging.py:67-70``): an unreachable Hub once printed 506 such
lines before the run's one error line. Long commands route it, and the crawler's own retry notes
(logger ``indexer``), to one handler: stderr with ``--verbose``, nowhere otherwise (the run's summary
and report count the retries).
"""

from __future__ import annotations

import logging
import sys

LOGGERS = ("huggingface_hub", "indexer")
QUIET_LOGGERS = ("httpx2", "httpcore", "httpx")  # one INFO line per request: never wanted


def route_logs(verbose: bool = False, stream=None) -> logging.Handler:
    """Send the client's and our log records to stderr when ``verbose``, else drop them."""
    if verbose:
        handler: logging.Handler = logging.StreamHandler(stream or sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s", "%H:%M:%S"))
    else:
        handler = logging.NullHandler()
    for name in LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.propagate = False
        logger.setLevel(logging.INFO if verbose else logging.WARNING)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    return handler
