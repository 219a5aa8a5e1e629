"""Shared test set-up: a hermetic Hugging Face environment and the corpus location."""

import json
import os
import tempfile
from pathlib import Path

import pytest

# Before anything imports huggingface_hub: no telemetry, no Xet, no token, never offline.
os.environ.update(
    HF_HOME=tempfile.mkdtemp(prefix="indexer-hf-home-"),
    HF_HUB_DISABLE_TELEMETRY="1",
    HF_HUB_DISABLE_XET="1",
    HF_HUB_DISABLE_PROGRESS_BARS="1",
    TRANSFORMERS_VERBOSITY="error",
    TOKENIZERS_PARALLELISM="false",
)
for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE",
             "HF_HUB_CACHE", "INDEXER_DB", "INDEXER_TOKENS"):
    os.environ.pop(_var, None)

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus"
MODELS = CORPUS / "models"

needs_corpus = pytest.mark.skipif(not (CORPUS / "oracle.json").is_file(), reason="../shared/corpus is absent")


@pytest.fixture(scope="session")
def oracle() -> dict:
    if not (CORPUS / "oracle.json").is_file():
        pytest.skip("../shared/corpus is absent")
    return json.loads((CORPUS / "oracle.json").read_text())


@pytest.fixture(scope="session")
def corpus_dirs(oracle) -> list[Path]:
    return sorted(MODELS / name for name in oracle["models"])


@pytest.fixture
def catalog(tmp_path) -> str:
    """A real, freshly migrated SQLite catalog; returns its path."""
    from indexer.db import upgrade

    path = tmp_path / "catalog.db"
    upgrade(str(path))
    return str(path)
