"""The ``indexer`` console script: ``query`` and ``check`` answered without loading click (issue 24).

A query should take little more than Python's own start-up, and click with its help machinery alone costs
more than the answer. So :func:`main` reads the argv of ``indexer query`` and ``indexer check`` itself, but
only when every word in it is one it fully understands: the options of :data:`COMMANDS`, each with a
well-formed value. Anything else (``--help``, an unknown option such as one a newer ``cli.py`` added, a
missing ``--target``, a value click would refuse, ``--``, shell completion) goes to the click CLI
(``indexer.cli:cli``) untouched, so click's words stay click's.

What the fast path does is what the click command does, in the same order: the same input checks (the
callbacks of ``cli_support``: ``answer.validate``, ``catalog.db.preflight``) run in click's processing order
(options in the order given, then the arguments, then the rest as declared; click's
``core.iter_params_for_processing``), the same library call, the same output. When the catalog cannot answer
(any error: a repo it lacks, no catalog, bad input) the argv goes to the click command, which answers live
(answer/live.py) or prints the one ``error:`` line and exit code ``cli_support.IndexerGroup`` makes of it.
tests/test_query_path.py holds both paths to byte-identical output and checks this table against cli.py's.
"""

from __future__ import annotations

import gc
import os
import sys

DB_ENVVAR = "INDEXER_DB"
COMPLETE_VAR = "_INDEXER_COMPLETE"  # click's shell completion (core.py _main_shell_completion): click's


class Opt:
    """One option of a command as click declares it in cli.py: its name, spelling and kind of value."""

    def __init__(self, name: str, flag: str, kind: str = "text", *, default=None, envvar: str | None = None):
        self.name, self.flag, self.kind, self.default, self.envvar = name, flag, kind, default, envvar


def _commands(names: tuple[str, ...] = ("query", "check")) -> dict:
    """``query`` and ``check`` (or those of ``names``) as cli.py declares them: (arguments, options), both in
    declaration order."""
    from . import engines

    db = Opt("db", "--db", envvar=DB_ENVVAR)
    engine = Opt("engine", "--engine", "engine", default=engines.DEFAULT_ENGINE)
    as_json = Opt("as_json", "--json", "flag", default=False)
    out = {}
    if "query" in names:
        out["query"] = ((), (Opt("target", "--target", "target"), engine, Opt("limit", "--limit", "int", default=10),
                             Opt("near_misses", "--near-misses", "flag", default=False),
                             Opt("all_", "--all", "flag", default=False),
                             Opt("method", "--method", "method", default="draft"), as_json, db))
    if "check" in names:
        from .files import DEFAULT_MAX_FILE_BYTES  # here: a query reads no files

        out["check"] = (("target", "draft"), (engine, as_json, db,
                                              Opt("max_file_bytes", "--max-file-bytes", "size",
                                                  default=DEFAULT_MAX_FILE_BYTES),
                                              Opt("verbose", "--verbose", "flag", default=False)))
    return out


def _value(kind: str, text: str):
    """``text`` as click's type for ``kind`` would convert it; None when click would refuse it."""
    from . import engines

    if kind in ("int", "size"):
        try:
            n = int(text)  # click.types.IntParamType: int(value)
        except ValueError:
            return None
        return n if kind == "int" or n >= 1 else None  # --max-file-bytes: IntRange(min=1)
    if kind == "engine":
        return text if text in engines.ENGINE_NAMES else None  # click.Choice, case-sensitive
    if kind == "method":
        return text if text in engines.QUERY_METHODS else None
    return text


def parse(argv: list[str]):
    """``(command, values, order)`` when the fast path understands all of ``argv``; None hands it to click.

    ``order`` is click's processing order of the parameters (names); ``values`` holds every one of them."""
    if not argv or argv[0] not in ("query", "check") or os.environ.get(COMPLETE_VAR):
        return None
    command = argv[0]
    arg_names, options = _commands((command,))[command]
    by_flag = {o.flag: o for o in options}
    values: dict = {}
    invoked: list[str] = []
    positional: list[str] = []
    rest = list(argv[1:])
    while rest:
        word = rest.pop(0)
        if word[:1] != "-" or len(word) == 1:
            positional.append(word)
            continue
        flag, eq, attached = word.partition("=")
        opt = by_flag.get(flag)
        if opt is None:  # --help, -h, --, an option this table does not know: click's
            return None
        if opt.kind == "flag":
            if eq:
                return None  # "Option '--json' does not take a value": click's words
            value = True
        else:
            if not eq:
                if not rest:
                    return None  # "Option requires an argument"
                attached = rest.pop(0)  # click takes the next word whatever it looks like
            value = _value(opt.kind, attached)
            if value is None:
                return None
        values[opt.name] = value  # the last one wins, as in click
        invoked.append(opt.name)
    if len(positional) != len(arg_names):
        return None  # a missing or an extra argument: click's usage error
    values.update(zip(arg_names, positional))
    invoked.extend(arg_names)
    for opt in options:
        if opt.name not in values:
            env = os.environ.get(opt.envvar) if opt.envvar else None
            if env:  # click ignores an empty variable (core.py Parameter.resolve_envvar_value)
                env = _value(opt.kind, env)
                if env is None:
                    return None
            values[opt.name] = env if env else opt.default
    if "target" not in values or values["target"] is None:
        return None  # "Missing option '--target'"
    declared = [*arg_names, *(o.name for o in options)]  # cli.py declares check's arguments first
    order = sorted(declared, key=lambda n: invoked.index(n) if n in invoked else float("inf"))
    return command, values, order


def echo(text: str, err: bool = False) -> None:
    """``click.echo(text)``: the line and a newline, flushed. Text click would change (ANSI codes on a stream
    that is not a terminal, a stream that is not UTF-8) goes through click itself."""
    stream = sys.stderr if err else sys.stdout
    if "\x1b" in text or (getattr(stream, "encoding", "") or "").lower().replace("-", "") != "utf8":
        import click

        click.echo(text, err=err)
        return
    stream.write(text + "\n")
    stream.flush()


def _checked(command: str, values: dict, order: list[str], meta: dict) -> None:
    """The callbacks of cli_support in click's order: valid_target, valid_limit, check_db."""
    for name in order:
        value = values[name]
        if name in ("target", "draft"):
            from .answer.validate import target

            values[name] = target(value, name)
        elif name == "limit":
            from .answer.validate import ANSWER_MAX_LIMIT, limit

            values[name] = limit(value, ANSWER_MAX_LIMIT, name="--limit")
        elif name == "db":
            from .catalog.connect import preflight  # catalog.db's, without its migrations module

            meta["db"] = value
            meta["db"] = preflight(value, write=False, connect=command != "check")


def _run(command: str, values: dict) -> bool:
    """The body of ``cli.query`` / ``cli.check``; False (nothing printed) when the answer needs the Hub: the
    catalog never looked for the target's drafts (answer/summary.py ``looked_for_drafts``)."""
    if command == "query":
        from .answer.query import render, run_query
        from .jsontext import answer_json

        result = run_query(values["target"], engine=values["engine"], limit=values["limit"],
                           near_misses=values["near_misses"], all_members=values["all_"], db=values["db"],
                           method=values["method"])
        if (result.get("summary") or {}).get("catalog_looked") is False:
            return False
        echo(answer_json(result) if values["as_json"] else
             render(result, all_members=values["all_"], near_misses=values["near_misses"]))
        return True
    from .answer.query import check, render_check, works_on
    from .answer.speedup import Options, add_to_check
    from .jsontext import answer_json

    result = check(values["target"], values["draft"], db=values["db"], max_file_bytes=values["max_file_bytes"])
    add_to_check(result, values["target"], values["draft"], values["db"], Options())
    echo(answer_json(result) if values["as_json"] else render_check(result, verbose=values["verbose"]))
    sys.exit(0 if works_on(result, values["engine"]) else 1)


def answer(command: str, values: dict, order: list[str]) -> bool:
    """Check, run and print; False when the catalog cannot answer (an error, a repo it lacks, no catalog).

    Those are the cases where ``cli.py`` goes on: it fetches a Hub repo the catalog lacks (answer/live.py) or
    says why not, in one line. Nothing has been printed then, so the click command can start afresh.
    """
    from .errors import IndexerError

    meta: dict = {}
    try:
        _checked(command, values, order, meta)
        if not _run(command, values):
            return False
    except IndexerError:
        return False
    except Exception as e:
        from .catalog.dberrors import as_catalog_error

        if isinstance(as_catalog_error(e, meta.get("db")), IndexerError):
            return False
        raise
    return True


def _click(argv: list[str] | None) -> None:
    """The click CLI, with the same argv."""
    from .cli import cli

    cli.main(args=argv) if argv is not None else cli.main()


def main(argv: list[str] | None = None) -> None:
    """The console script: the fast path for what :func:`parse` understands, the click CLI for the rest.

    With ``argv`` None (the console script itself), an answered query or check leaves by :func:`leave`."""
    parsed = parse(sys.argv[1:] if argv is None else list(argv))
    if parsed is None:
        return _click(argv)
    gc.disable()  # a short-lived answer frees nothing worth collecting: the collector's passes cost 2-3 ms
    try:
        answered = answer(*parsed)
    except SystemExit as e:  # check's exit status (0: works on the engine asked, 1: not)
        if argv is None and isinstance(e.code, int):
            leave(e.code)
        raise
    except KeyboardInterrupt:  # click's main: a blank line, then "Aborted!", exit 1
        echo("", err=True)
        echo("Aborted!", err=True)
        sys.exit(1)
    except BrokenPipeError:  # click's main on EPIPE: exit 1, nothing more written
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the interpreter flushes it at exit
        sys.exit(1)
    if not answered:
        gc.enable()  # click's commands may run long (crawl, compute)
        _click(argv)
    elif argv is None:
        leave(0)


def leave(code: int) -> None:
    """Exit with ``code`` once the answer is written, without tearing the interpreter down: freeing every module
    and object of the answer (and unloading sqlite3) costs about 10 ms, a sixth of a query (issue 31). Nothing
    is left to do at exit on the fast path: the catalog is closed, no thread or atexit handler runs, and the
    streams are flushed here (echo flushes each line already)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away: click's exit status for EPIPE
        code = 1
    os._exit(code)
