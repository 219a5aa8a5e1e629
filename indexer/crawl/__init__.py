"""The crawl layer: the loop over a scope (loop), listing it (listing), fetching the tokenizer files and config
of each changed repo (fetch), and writing each repo in one transaction (writer, claims, writefail)."""
