"""The ``indexer`` commands, one module per command (or group: ``db``), each a click command of the same name
that ``indexer.cli`` imports when it runs; and what they share, one concern a module: ``options`` (the shared
options), ``checks`` (their input checks), ``output`` (one-line failures, ``--json``), ``signals`` (Ctrl-C and
SIGTERM in a long command)."""
