"""Hub-wide vocabulary-compatibility indexer for speculative decoding."""

import os

# Before anything imports huggingface_hub (it reads this at import, constants.py:343): no Xet.
# On the real Hub, LFS files answer the /resolve HEAD with X-Xet-Hash and a "xet-auth" Link, and with
# hf_xet installed (a hard dependency of huggingface_hub 2.x) the client then spends one API call per
# repo revision on xet-read-token and downloads from the Xet CAS, outside the crawler's request hook.
# With Xet disabled the client GETs the /resolve URL and follows its redirect (file_download.py:1818,
# :2015-2024): plain HTTP, a resolver call instead of an API call, every byte counted and paced by us.
# Every entry point (the CLI, nightly, ``import indexer.crawl.loop``) imports this package first.
os.environ["HF_HUB_DISABLE_XET"] = "1"
# No telemetry (constants.py:244-248 reads it at import): no unpaced GET /api/agent-harnesses on the first
# request (utils/_detect_agent.py:189-204), nothing about the machine in the user agent (_headers.py:183-189).
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

__version__ = "0.1.0"
