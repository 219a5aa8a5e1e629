"""The answer layer: what the CLI and the site both call to answer a query, a check or a lookup."""
