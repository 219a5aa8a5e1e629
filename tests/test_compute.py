"""`indexer compute`: classes per engine by grouping, idempotence, repo counts, meta, pair cache."""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner
from test_query import REPOS, TARGET, build_catalog

from indexer.catalog.compute import compute
from indexer.catalog.compute_pairs import candidate_pairs
from indexer.catalog.tokenstore import TokenStore, default_root
from indexer.cli import cli
from indexer.vocab.fingerprint import canonical_bytes

TABLES = {
    "compat_classes": "SELECT id, engine, class_key, vocab_size, tokenizer_id, members, label "
                      "FROM compat_classes",
    "repo_classes": "SELECT repo_pk, engine, class_id, params, lineage_id FROM repo_classes",
    "tokenizers": "SELECT id, repo_count FROM tokenizers",
    "pair_verdicts": "SELECT * FROM pair_verdicts",
}


def dump(db: str) -> dict:
    with sqlite3.connect(db) as conn:
        return {name: sorted(conn.execute(sql).fetchall()) for name, sql in TABLES.items()}


@pytest.fixture()
def db(tmp_path):
    return build_catalog(tmp_path / "catalog.db")


def test_classes_per_engine(db):
    stats = compute(db)
    ok = [r for r in REPOS]
    assert stats["repos"] == len(ok)
    # Every size-based engine: (its size, mapping); llama.cpp: the GGUF signature, which needs the
    # engine facts derived from stored blobs (this hand-built catalog has none).
    # Ollama takes no draft models: no classes.
    assert stats["classes"] == {"sglang": 5, "vllm": 5, "transformers": 5, "llama.cpp": 0, "mlx": 4,
                                "lmstudio": 4, "ollama": 0}
    for engine in ("sglang", "vllm", "transformers", "mlx", "lmstudio"):
        assert stats["memberships"][engine] == len(ok)
    assert stats["memberships"]["llama.cpp"] == 0 and stats["engine_facts"]["derived"] == 0
    with sqlite3.connect(db) as conn:
        members = dict(conn.execute("SELECT class_key, members FROM compat_classes WHERE engine = 'sglang'"))
        assert members["152064:" + "a" * 64] == sum(1 for r in REPOS if r[1] == 1 and r[2] == 152064)
        labels = [row[0] for row in conn.execute("SELECT label FROM compat_classes")]
        assert all(labels) and any("vocab_size 152064" in s for s in labels)
        counts = dict(conn.execute("SELECT id, repo_count FROM tokenizers"))
        assert counts == {1: sum(1 for r in REPOS if r[1] == 1), 2: 1, 3: 1, 4: 1}
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        assert meta["transformers_version"].startswith("5.")
        assert float(meta["compute_seconds"]) >= 0 and meta["computed_at"]
        # Lineage: a fine-tune of Qwen2.5-7B shares the 7B's lineage id (its pk).
        lin = dict(conn.execute("SELECT r.repo_id, rc.lineage_id FROM repo_classes rc JOIN repos r "
                                "ON r.id = rc.repo_pk WHERE rc.engine = 'sglang'"))
        assert lin["ft/derived"] == lin[TARGET] == lin["Qwen/Qwen2.5-7B"]
        assert lin["other/tiny-chat"] != lin[TARGET]
        # The (class_id, params) index and the ranking order's index exist after the rebuild.
        idx = [r[1] for r in conn.execute("PRAGMA index_list('repo_classes')")]
        assert {"ix_repo_classes_class_params", "ix_repo_classes_class_rank"} <= set(idx)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_compute_is_idempotent(db):
    compute(db)
    first = dump(db)
    compute(db)
    assert dump(db) == first


def test_compute_follows_catalog_changes(db):
    compute(db)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE repos SET status = 'error' WHERE repo_id = 'variant/added'")
    stats = compute(db)
    assert stats["repos"] == len(REPOS) - 1
    assert stats["classes"]["sglang"] == 4


def test_cli_compute(db):
    res = CliRunner().invoke(cli, ["compute", "--db", db, "--quiet"])
    assert res.exit_code == 0, res.output
    assert "classified" in res.output and "sglang" in res.output
    res = CliRunner().invoke(cli, ["compute", "--db", db + ".missing"])
    assert res.exit_code == 2


def test_pair_verdicts_cached_from_token_store(db):
    """Tokenizers sharing a base vocabulary get TLI intersections, cached by tokenizer ids."""
    base = {f"Ġw{i}": i for i in range(200)}
    v1 = dict(base, **{"<|im_start|>": 200})
    v2 = dict(base, **{"<|other|>": 200})
    store = TokenStore(default_root(db))
    import hashlib

    shas = []
    for vocab in (v1, v2):
        raw = canonical_bytes(vocab)
        sha = hashlib.sha256(raw).hexdigest()
        store.put(sha, raw)
        shas.append(sha)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE tokenizers SET vocab_sha256 = ?, max_id = 200, vocab_len = 201 WHERE id = 1",
                     (shas[0],))
        conn.execute("UPDATE tokenizers SET vocab_sha256 = ?, max_id = 200, vocab_len = 201 WHERE id = 2",
                     (shas[1],))
    stats = compute(db)
    assert stats["pairs"]["computed"] == 2  # (1, 2) and (2, 1)
    with sqlite3.connect(db) as conn:
        rows = {(a, b): (ok, why, n, r)
                for a, b, ok, why, n, r in conn.execute("SELECT * FROM pair_verdicts")}
    ok, why, inter, ratio = rows[(1, 2)]
    assert ok is None and why is None  # llama.cpp is decided on GGUF vocabularies (llamacpp_pairs)
    assert inter == 200 and ratio == pytest.approx(200 / 201, abs=1e-4)
    again = compute(db)
    assert again["pairs"]["computed"] == 0 and again["pairs"]["cached"] == 2


def test_candidate_pairs_bounded():
    toks = [(i, "same-base", 1000 + i) for i in range(1, 200)]
    pairs = candidate_pairs(toks, {})
    per = {}
    for a, _ in pairs:
        per[a] = per.get(a, 0) + 1
    assert max(per.values()) <= 32
    fam = candidate_pairs([(1, "x", 1000), (2, "y", 1100), (3, "z", 1300)], {1: {"f"}, 2: {"f"}, 3: {"f"}})
    assert fam == [(1, 2), (2, 1)]  # 1300 is more than 128 away from both


def test_agreement_step_flags_tokenizers_once_and_recounts_after_a_text_change(db):
    stats = compute(db)["agreement"]
    # No added tokens and no counts (a hand-built catalog): every same-base draft agrees, by ids.
    assert stats["flagged"] == 4 and stats["agree_by_base"] == 4 and stats["seconds"] >= 0
    with sqlite3.connect(db) as conn:
        flags = dict(conn.execute("SELECT id, agrees_by_base FROM tokenizers"))
        assert flags == {1: 1, 2: 1, 3: 1, 4: 1}
        assert {b for (b,) in conn.execute("SELECT agreement_basis FROM tokenizers")} == {"ids"}
    assert compute(db)["agreement"]["flagged"] == 0  # measured once
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = 'another text' WHERE key = 'agreement_text_sha256'")
    assert compute(db)["agreement"]["flagged"] == 4  # counts over another text are stale: measured again
