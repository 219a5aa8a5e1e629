"""One exception hierarchy: every error a person sees is an :class:`IndexerError`.

Each class carries how it is reported: ``exit_code`` for the CLI (the exit statuses each command's help
lists) and ``http_status`` for the site. The CLI (``cli.IndexerGroup``) and the site (``site/hooks.py``)
map an error through these two attributes, so by its type, never by its words. The classes keep their
historical names where they are raised (``query.QueryError``, ``lookup.RepoNotFound``, ...); this module
is the one place they are defined or re-based.
"""

from __future__ import annotations

from collections.abc import Sequence

EXIT_FAILED = 1  # the work ran and failed (see its report)
EXIT_BAD_INPUT = 2  # bad input or catalog: nothing was done
EXIT_NOT_FOUND = 3  # the repo is not in the catalog, or has no answer there
EXIT_LOCKED = 75  # EX_TEMPFAIL (sysexits.h): another run holds the lock, try again later
EXIT_INTERRUPTED = 130  # 128 + SIGINT, the shell's convention


def is_panic(exc: BaseException) -> bool:
    """A Rust panic surfaced by pyo3 (``pyo3_runtime.PanicException``, a BaseException that ``except Exception``
    misses): the ``tokenizers`` library on a hostile file (indexer/vocab/tokenbox.py), never an interrupt."""
    return type(exc).__name__ == "PanicException"


class IndexerError(Exception):
    """Base of every error we report: ``message`` is one line for a person."""

    exit_code = EXIT_BAD_INPUT
    http_status = 400

    def __init__(self, message: str = ""):
        super().__init__(message)
        self.message = message

    def reworded(self, message: str) -> IndexerError:
        """The same error (type, exit code, status) with a new message: a caller adds context, not a new type."""
        self.message = message
        self.args = (message,)
        return self

    def to_dict(self) -> dict:
        """The JSON body the site answers with (``exit_code`` is what the CLI would exit with)."""
        return {"error": self.message, "exit_code": self.exit_code}


class BadInput(IndexerError):
    """An argument or URL parameter that cannot be right (indexer/answer/validate.py): nothing was read."""


class InputError(BadInput):
    """A file that cannot be read as a model (one line); ``status`` is the catalog repo status it earns."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


class CatalogError(IndexerError):
    """The catalog is missing, not migrated, unreachable, read-only or locked (one line, with the fix).

    On the site this is the server's fault, not the visitor's: 503.
    """

    http_status = 503


class QueryError(IndexerError):
    """A question the catalog cannot answer as asked; ``code`` is the exit status (3: nothing to answer with)."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.exit_code = self.code = code
        self.http_status = 404 if code == EXIT_NOT_FOUND else 400


class RepoNotFound(QueryError):
    """The repo a person named is not in the catalog; ``suggestions`` are the closest ids."""

    def __init__(self, message: str, suggestions: Sequence[str] = ()):
        super().__init__(message, EXIT_NOT_FOUND)
        self.suggestions = list(suggestions)


class PublishError(IndexerError):
    """The bundle cannot be written or served (one line)."""


class DatasetError(IndexerError):
    """A Hub dataset repo cannot be read or written as asked (publish --to-hub, pull): one line.

    Exit 2 when the fault is the input's (no token, a read-only token, a missing or mistyped repo, a file that is
    not a catalog); ``exit_code=1`` when the run failed on the way (network, server error, full disk).
    """

    def __init__(self, message: str, exit_code: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.exit_code = exit_code
        self.http_status = 400 if exit_code == EXIT_BAD_INPUT else 503


class PortBusy(PublishError):
    """Another process listens on the port: reported before anything claims to be serving."""


class LockBusy(IndexerError):
    """Another nightly run holds the lock."""

    exit_code = EXIT_LOCKED
    http_status = 503

    def __init__(self, path, holder: str):
        super().__init__(f"another nightly run holds {path} ({holder}); exiting")
        self.path = path


class CrawlFailed(IndexerError):
    """Every listing failed, or nothing resolved and every repo failed; ``summary`` has the counts."""

    exit_code = EXIT_FAILED
    http_status = 500

    def __init__(self, message: str, summary: dict):
        super().__init__(message)
        self.summary = summary


class CrawlInterrupted(IndexerError):
    """Ctrl-C / SIGTERM: the run was recorded as ``interrupted``; ``summary`` has the counts."""

    exit_code = EXIT_INTERRUPTED
    http_status = 503

    def __init__(self, summary: dict):
        super().__init__("crawl interrupted")
        self.summary = summary


class SiteError(IndexerError):
    """A site request that cannot be answered, with its own HTTP status."""

    def __init__(self, message: str, status: int = 400, exit_code: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.http_status, self.exit_code = status, exit_code

    @property
    def status(self) -> int:
        """``http_status`` under the name SiteError had before every error carried its own (kept for callers)."""
        return self.http_status


class HubUnreachable(IndexerError):
    """The Hub refuses connections or cannot be resolved: nothing this run does can succeed."""

    exit_code = EXIT_FAILED
    http_status = 503


class WriteFailed(IndexerError):
    """A write to the catalog, the blob store or the token store failed: the run stops here."""

    exit_code = EXIT_FAILED
    http_status = 500


# Internal signals: caught inside the library, never shown as they are.


class CallTimedOut(IndexerError):
    """One Hub call (with every retry) took longer than its budget; worth retrying on a later run."""

    exit_code = EXIT_FAILED
    http_status = 504


class Cancelled(IndexerError):
    """The run was interrupted; requests still to be sent are dropped."""

    exit_code = EXIT_INTERRUPTED
    http_status = 503


class TransientError(IndexerError):
    """A Hub failure worth retrying on a later run (rate limit, server error, network)."""

    exit_code = EXIT_FAILED
    http_status = 503


class AnswerRefused(TransientError):
    """A Hub API answer not read: past its size cap once decoded (a gzip bomb, an endless body), or in a
    content encoding that was not asked for."""


class UnsafeName(IndexerError, ValueError):
    """A Hub-provided name that must never become a local path."""


class BudgetExhausted(IndexerError):
    """The run's time or API-call budget is spent: stop starting work, keep what is done."""


class NeedsReference(IndexerError):
    """The fingerprint's fast path cannot prove it matches transformers; the message says why."""


class AmbiguousTextConfig(IndexerError, ValueError):
    """transformers' get_text_config() raises: several sub-configs qualify."""


class ConverterError(IndexerError):
    """What llama.cpp's convert_hf_to_gguf.py raises, as ``Type: message`` (the converter's own words)."""


class NotModelled(ConverterError):
    """A converter path indexer.gguf.hf does not reproduce; the prediction says so instead of guessing."""


class MeasureFailed(IndexerError):
    """``indexer measure`` could not measure: the server refused, did not answer, or answered what its engine
    does not (one line: the URL and what came back)."""

    exit_code = EXIT_FAILED
    http_status = 502
