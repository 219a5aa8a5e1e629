"""The answer layer: what the CLI and the site both call to answer a query, a check or a lookup.

``answer.query`` is the one API they call (``run_query``, ``check``, ``render``, ``render_check``); the modules
beside it are its pieces and never import it back.
"""
