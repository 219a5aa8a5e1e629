"""The project's docs and code cite only what a reader of the project has: its own docs or the engines' sources.

The reference notes beside the checkout (../shared) are not shipped; docs/hub-api.md and docs/hub-upload.md are the
project's own copies of the Hub notes, so "HUB-API §n" and "docs/hub-upload.md §n" resolve inside the project.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROVENANCE = "The project's copy."  # docs/hub-api.md says where it was copied from: a provenance, not a citation
OUTSIDE = re.compile(r"DESIGN(\.md| ?§)|ENGINE-ARCH-RULES|HUB-UPLOAD|shared/HUB-API")


def cited_files():
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").glob("*.md"))
    yield from sorted((ROOT / "indexer").rglob("*.py"))
    yield from sorted((ROOT / "benchmarks").glob("*.py"))


def test_no_citation_of_a_document_outside_the_project():
    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()[:100]}"
             for p in cited_files()
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if OUTSIDE.search(line) and PROVENANCE not in line]
    assert not found, "cite docs/ or the engine's source instead:\n" + "\n".join(found)
