"""hubsim: a local imitation of the Hugging Face Hub for hermetic crawler tests and benchmarks.

``HubServer(root)`` serves a directory tree of repos to the unmodified ``huggingface_hub`` client;
``generate_synthetic_hub(out_dir, n)`` writes a realistic, heavily deduplicated tree to serve.
"""

from .repos import FileEntry, Repo, RepoStore, git_blob_sha1
from .server import COUNTER_KINDS, HubServer
from .synthetic import generate_synthetic_hub
from .wire import FAULT_KINDS, Fault

__all__ = [
    "COUNTER_KINDS",
    "FAULT_KINDS",
    "Fault",
    "FileEntry",
    "HubServer",
    "Repo",
    "RepoStore",
    "generate_synthetic_hub",
    "git_blob_sha1",
]
