"""Ctrl-C and SIGTERM in a long command (demo, crawl, compute, nightly, pull, publish): one line and exit 130
(143), never a traceback, and never lost."""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import threading
import time

import click

SIGNALLED: dict = {}  # the first SIGINT/SIGTERM a long command received ({"signum": n}), see interrupt_on_signals


def interrupt_on_signals() -> dict:
    """The first SIGTERM or SIGINT raises KeyboardInterrupt in the main thread: the run is recorded as
    interrupted and reported. A second one exits at once (every repo is its own transaction, so nothing
    committed is lost). Returns the dict that remembers the first signal (:data:`SIGNALLED`).

    A KeyboardInterrupt raised where Python cannot propagate it (a weakref finalizer, a ``__del__``) is
    printed by ``sys.unraisablehook`` as a traceback and then lost: the hook drops it silently here, and
    :func:`long_run` still sees the signal in the dict."""
    def handler(signum, _frame):
        if "signum" in SIGNALLED:
            os._exit(128 + signum)
        SIGNALLED["signum"] = signum
        raise KeyboardInterrupt

    if getattr(sys.unraisablehook, "__name__", "") != "_quiet_interrupts":
        default = sys.unraisablehook

        def _quiet_interrupts(unraisable):
            if not isinstance(unraisable.exc_value, KeyboardInterrupt):
                default(unraisable)

        sys.unraisablehook = _quiet_interrupts
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return SIGNALLED


def long_run(name: str):
    """Decorator of a long command (demo, crawl, compute, nightly, pull, publish, measure): Ctrl-C or SIGTERM is one
    line, ``error: NAME interrupted``, and exit 130 (143), never a traceback, and never lost. Each command
    writes in transactions or renames into place, so an interrupted run leaves nothing half-written and the
    next run resumes."""
    def deco(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            SIGNALLED.clear()
            got = interrupt_on_signals()
            try:
                result = f(*args, **kwargs)
            except KeyboardInterrupt:
                exit_interrupted(got, f"error: {name} interrupted")
            if got:  # swallowed on the way (a finalizer, a library's cleanup): the run was still interrupted
                exit_interrupted(got, f"error: {name} interrupted")
            return result

        return wrapper

    return deco


def stop_handling_signals() -> None:
    """Back to Python's own Ctrl-C (KeyboardInterrupt) and SIGTERM before a long command serves until stopped
    (demo): stopping a server is its normal end, not an interruption."""
    SIGNALLED.clear()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def exit_interrupted(got: dict, message: str | None = None) -> None:
    """Exit 128 + the signal (143 SIGTERM, 130 SIGINT). Everything worth keeping is committed and reported
    by now; crawl workers still stuck in a stalled request are not waited for."""
    if message:
        click.echo(message, err=True)
    code = 128 + got.get("signum", signal.SIGINT)
    give_up = time.monotonic() + 2.0
    for t in threading.enumerate():
        if t.name.startswith("crawl") and t is not threading.current_thread():
            t.join(max(0.0, give_up - time.monotonic()))
    if any(t.name.startswith("crawl") and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
    sys.exit(code)
