"""How much each engine's answer changed between its two newest releases we have read.

    python scripts/engine_changes.py [CORPUS_DIR]

Per engine with more than one release: the rule rows (architecture rows, vocabulary rule, fix, sources, heads)
that hold at only one of the two releases, how many of those only moved their citation, and over every ordered
pair of the corpus models (../shared/corpus, oracle-engines.json's models) how many verdicts changed their outcome,
their words, or their fix.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

from indexer.answer.localdir import side_from_dir
from indexer.engines import ENGINES
from indexer.engines.archrules import ArchRule, at_release
from indexer.engines.rules import check_pair

CITATION = ("source", "anchors", "since", "until")


def rows_changed(name: str) -> dict:
    """Rows holding at only the older or only the newer release, and how many only moved their citation."""
    e = ENGINES[name]
    old, new = e.releases[-2], e.releases[-1]
    only_old, only_new, relined = 0, 0, 0
    for rows in e.ranged.values():
        at_old, at_new = at_release(rows, old, e.releases), at_release(rows, new, e.releases)
        gone = [r for r in at_old if r not in at_new]
        came = [r for r in at_new if r not in at_old]
        only_old += len(gone)
        only_new += len(came)
        if rows and isinstance(rows[0], ArchRule):
            def same(a, b):
                return all(getattr(a, f) == getattr(b, f) for f in a._fields if f not in CITATION)
            relined += sum(1 for r in came if any(same(r, g) for g in gone))
    return {"old": old, "new": new, "rows_only_old": only_old, "rows_only_new": only_new,
            "citation_only": relined}


def verdicts_changed(models: Path, names: list[str], versioned: list[str]) -> dict:
    """Over every ordered pair: per engine, verdicts whose outcome, words or fix differ between the releases."""
    sides = {n: side_from_dir(models / n) for n in names}
    old = {n: ENGINES[n].releases[-2] for n in versioned}
    out = {n: {"pairs": 0, "outcome": 0, "reasons": 0, "fix": 0} for n in versioned}
    for t, d in itertools.permutations(names, 2):
        a, b = check_pair(sides[t], sides[d], old), check_pair(sides[t], sides[d])
        for n in versioned:
            out[n]["pairs"] += 1
            va, vb = a["verdicts"][n], b["verdicts"][n]
            out[n]["outcome"] += va["outcome"] != vb["outcome"]
            out[n]["reasons"] += va["reasons"] != vb["reasons"]
            out[n]["fix"] += a["fixes"][n] != b["fixes"][n]
    return out


def main(argv: list[str]) -> int:
    corpus = Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / ".." / "shared" / "corpus"
    names = sorted(json.loads((corpus / "oracle-engines.json").read_text())["models"])
    versioned = [n for n, e in ENGINES.items() if len(e.releases) > 1]
    for n in versioned:
        print(n, json.dumps(rows_changed(n)))
    for n, counts in verdicts_changed(corpus / "models", names, versioned).items():
        print(n, "corpus verdicts changed:", json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
