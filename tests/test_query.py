"""`indexer query`: ranking properties, exit codes, JSON shape, --all, near misses, catalog sides."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from indexer.answer.lookup import RepoNotFound
from indexer.answer.query import QueryError, run_query
from indexer.answer.rule_inputs import side_from_catalog
from indexer.catalog.compute import compute
from indexer.catalog.db import make_engine, upgrade
from indexer.catalog.models import Repo, Tokenizer
from indexer.cli import cli

T1, T2, T3 = "a" * 64, "c" * 64, "d" * 64
TARGET = "Qwen/Qwen2.5-7B-Instruct"
B = 1_000_000_000


def _tok(pk, sha, base, vlen, hf):
    return dict(id=pk, vocab_sha256=sha, base_vocab_sha256=base, vocab_len=vlen, max_id=vlen - 1, id_holes=0,
                hf_vocab_size=hf, added_tokens=[], bos_token_id=None, eos_token_id=151643,
                add_bos_token=False, add_eos_token=False, model_type="BPE", method="fast", repo_count=0)


# repo_id, tokenizer pk, vocab_size, params, author, family, is_chat, downloads, extra
REPOS = [
    (TARGET, 1, 152064, 7.6 * B, "Qwen", "qwen2.5", True, 5_000_000, {"base_models": ["Qwen/Qwen2.5-7B"]}),
    ("Qwen/Qwen2.5-7B", 1, 152064, 7.6 * B, "Qwen", "qwen2.5", False, 1_000_000, {}),
    ("Qwen/Qwen2.5-32B-Instruct", 1, 152064, 32 * B, "Qwen", "qwen2.5", True, 900_000, {}),
    ("Qwen/Qwen2.5-0.5B-Instruct", 1, 151936, 0.49 * B, "Qwen", "qwen2.5", True, 3_000_000, {}),
    ("Qwen/small-chat", 1, 152064, 0.5 * B, "Qwen", "qwen2.5", True, 100, {}),
    ("other/tiny-chat", 1, 152064, 0.3 * B, "other", None, True, 10_000_000, {}),
    ("ft/derived", 1, 152064, 1.0 * B, "ft", None, None, 5, {"base_models": ["Qwen/Qwen2.5-7B"]}),
    ("dead/disabled", 1, 152064, 0.4 * B, "dead", None, True, 10**9, {"disabled": True}),
    ("who/unknown-params", 1, 152064, None, "who", None, True, 50, {}),
    ("gate/gated-chat", 1, 152064, 0.35 * B, "gate", None, True, 20_000_000, {"gated": "manual"}),
    ("variant/added", 2, 152064, 0.5 * B, "variant", None, True, 70, {}),
    ("meta-llama/Llama-3.2-1B", 3, 128256, 1.2 * B, "meta-llama", "llama3", False, 2_000_000, {}),
    ("other/unrelated", 4, 152064, 0.6 * B, "other2", None, True, 60, {}),
]


def build_catalog(path) -> str:
    db = str(path)
    upgrade(db)
    engine = make_engine(db)
    with engine.begin() as conn:
        conn.execute(sa.insert(Tokenizer), [
            _tok(1, T1, "b" * 64, 151665, 151643),
            _tok(2, T2, "b" * 64, 151670, 151643),
            _tok(3, T3, "e" * 64, 128256, 128000),
            _tok(4, "f" * 64, "9" * 64, 151665, 151643),  # another base vocabulary of the same size
        ])
        rows = []
        for i, (rid, tok, vs, params, author, family, chat, dl, extra) in enumerate(REPOS, start=1):
            row = dict(id=i, repo_id=rid, tokenizer_id=tok, vocab_size=vs, vocab_size_transformers=vs,
                       params=int(params) if params else None, author=author, family=family, is_chat=chat,
                       downloads=dl, status="ok", disabled=False, gated=None, base_models=None)
            row.update(extra)
            rows.append(row)
        rows.append(dict(id=len(rows) + 1, repo_id="broken/no-tok", status="no_tokenizer", disabled=False,
                         reason="no tokenizer files", tokenizer_id=None, vocab_size=None,
                         vocab_size_transformers=None, params=None, author="broken", family=None,
                         is_chat=None, downloads=1, gated=None, base_models=None))
        conn.execute(sa.insert(Repo), rows)
    engine.dispose()
    return db


@pytest.fixture()
def catalog(tmp_path):
    db = build_catalog(tmp_path / "catalog.db")
    compute(db)
    return db


def ids(entries):
    return [e["repo_id"] for e in entries]


def params_of(rid):
    return next(int(r[3]) if r[3] else None for r in REPOS if r[0] == rid)


def test_never_bigger_never_disabled_and_lineage_first(catalog):
    result = run_query(TARGET, db=catalog, limit=50)
    drafts = ids(result["drafts"])
    assert drafts, result
    for d in result["drafts"][:-1]:
        assert d["params"] is not None and d["params"] < params_of(TARGET)
    assert "dead/disabled" not in drafts
    assert "Qwen/Qwen2.5-32B-Instruct" not in drafts and "Qwen/Qwen2.5-7B" not in drafts
    # A draft of unknown size is still listed, after the sized ones.
    assert drafts[-1] == "who/unknown-params" and result["drafts"][-1]["params"] is None
    assert "Qwen/Qwen2.5-0.5B-Instruct" not in drafts  # other vocab_size: SGLang rejects it
    assert "other/unrelated" not in drafts  # another base vocabulary: useless
    # Same base vocabulary, other added tokens: the vocabularies agree, so it works, its difference flagged.
    added = result["drafts"][drafts.index("variant/added")]
    assert added["outcome"] == "works" and added["agreement"]["class"] == "works"
    assert "agree" in added["reasons"][0] and result["drafts"][0]["agreement"] is None
    # Lineage (same author, or shared base model) beats far more downloads from a stranger.
    assert drafts.index("Qwen/small-chat") < drafts.index("other/tiny-chat")
    assert drafts.index("ft/derived") < drafts.index("other/tiny-chat")
    # Not gated beats gated, other things equal.
    assert drafts.index("other/tiny-chat") < drafts.index("gate/gated-chat")
    reasons = dict(zip(drafts, (d["reasons"] for d in result["drafts"]), strict=True))
    assert any("same lineage" in r and "Qwen/Qwen2.5-7B" in r for r in reasons["ft/derived"])
    assert any("same author" in r for r in reasons["Qwen/small-chat"])
    assert any("gated" in r for r in reasons["gate/gated-chat"])


def test_a_request_reads_one_snapshot_of_the_catalog(catalog):
    """open_reader's reader (a query's, a site page's) reads one state of the catalog: a write committed while it
    answers is not half seen (Reader(snapshot=True)); a plain Reader sees it at its next statement."""
    import sqlite3

    from indexer.answer.query import open_reader
    from indexer.catalog.reader import Reader

    count = "SELECT COUNT(*) FROM repos"
    with open_reader(catalog) as request, Reader(catalog) as plain:
        before = request.one(count)[0]
        assert plain.one(count)[0] == before
        writer = sqlite3.connect(catalog)
        writer.execute("UPDATE repos SET repo_id = repo_id || '-renamed' WHERE id = (SELECT MIN(id) FROM repos)")
        writer.execute("DELETE FROM repo_classes WHERE repo_pk = (SELECT MAX(id) FROM repos)")
        writer.execute("DELETE FROM repos WHERE id = (SELECT MAX(id) FROM repos)")
        writer.commit()
        writer.close()
        assert request.one(count)[0] == before and not request.all("SELECT 1 FROM repos WHERE repo_id LIKE '%-renamed'")
        assert plain.one(count)[0] == before - 1 and plain.all("SELECT 1 FROM repos WHERE repo_id LIKE '%-renamed'")
    with open_reader(catalog) as later:  # the next request sees the write
        assert later.one(count)[0] == before - 1


def test_json_shape(catalog):
    res = CliRunner().invoke(cli, ["query", "--target", TARGET, "--json", "--db", catalog, "--near-misses"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert set(data) == {"target", "engine", "drafts", "near_misses", "summary", "refused", "unknown", "version",
                         "by_version"}
    assert all(m["outcome"] in ("useless", "refused") for m in data["near_misses"])
    assert data["engine"] == "sglang" and data["version"] == "0.5.23" and data["by_version"] is None
    assert data["target"]["repo_id"] == TARGET
    for d in data["drafts"]:
        assert set(d) >= {"repo_id", "params", "ratio", "downloads", "reasons", "launch"}
        assert isinstance(d["repo_id"], str) and isinstance(d["params"], int | None)
        assert isinstance(d["ratio"], float | None) and isinstance(d["reasons"], list) and d["reasons"]
        assert all(isinstance(r, str) for r in d["reasons"])
        flags = "--speculative-algorithm STANDALONE --speculative-draft-model-path " + d["repo_id"]
        assert flags in d["launch"]
    assert data["near_misses"]


@pytest.mark.parametrize("engine,flag", [
    ("sglang", "--speculative-draft-model-path Qwen/small-chat"),
    ("vllm", '"method": "draft_model", "model": "Qwen/small-chat", "num_speculative_tokens": '),
    ("transformers", "assistant = AutoModelForCausalLM.from_pretrained('Qwen/small-chat', "),
    # MLX also accepts the 0.5B with its smaller config vocab_size, and it has more downloads.
    ("mlx", "mlx_lm.convert --hf-path Qwen/Qwen2.5-0.5B-Instruct -q --q-bits 4"),  # to the estimate's 4 bits
    ("lmstudio", "--hf-path Qwen/Qwen2.5-0.5B-Instruct -q --q-bits 4 --mlx-path ~/.lmstudio/models/local/"),
])
def test_launch_flags_per_engine(catalog, engine, flag):
    res = CliRunner().invoke(cli, ["query", "--target", TARGET, "--engine", engine, "--db", catalog])
    assert res.exit_code == 0, res.output
    assert flag in res.output


def test_unknown_target_exit_3(catalog):
    res = CliRunner().invoke(cli, ["query", "--target", "nobody/nothing", "--db", catalog])
    assert res.exit_code == 3
    assert "indexer crawl --model nobody/nothing" in res.output
    with pytest.raises(QueryError) as e:
        run_query("nobody/nothing", db=catalog)
    assert e.value.code == 3


def test_missing_catalog_exit_2(tmp_path):
    res = CliRunner().invoke(cli, ["query", "--target", TARGET, "--db", str(tmp_path / "nope.db")])
    assert res.exit_code == 2


def test_all_returns_exactly_the_class(catalog):
    result = run_query(TARGET, db=catalog, all_members=True)
    expected = {r[0] for r in REPOS if r[1] in (1, 2) and r[2] == 152064} - {TARGET}  # 2: same base, agrees
    assert set(ids(result["drafts"])) == expected
    assert len(result["drafts"]) == len(expected)
    assert result["target"]["class_members"] == len(expected)  # the class: the identical mapping; + variant/added
    # vLLM starts with another mapping too: the same-base one works, the unrelated one is a useless near miss
    # where TLI can fix it (0.33.0; 0.34.0 has no TLI, so no fix and no near miss).
    vllm = run_query(TARGET, db=catalog, all_members=True, engine="vllm", near_misses=True, release="0.33.0")
    assert set(ids(vllm["drafts"])) == expected
    other = next(m for m in vllm["near_misses"] if m["repo_id"] == "other/unrelated")
    assert other["outcome"] == "useless" and "disagree" in other["reason"]
    # MLX compares tokenizer.vocab_size (the base vocabulary): every repo of an agreeing mapping works.
    mlx = run_query(TARGET, db=catalog, all_members=True, engine="mlx")
    assert set(ids(mlx["drafts"])) == {r[0] for r in REPOS if r[1] in (1, 2)} - {TARGET}
    # llama.cpp needs the GGUF facts that compute derives from stored blobs: this catalog has none.
    with pytest.raises(QueryError) as e:
        run_query(TARGET, db=catalog, all_members=True, engine="llama.cpp")
    assert "no llama.cpp class" in e.value.message


def test_near_misses(catalog):
    result = run_query(TARGET, db=catalog, near_misses=True)
    misses = {m["repo_id"]: m for m in result["near_misses"]}
    size = misses["Qwen/Qwen2.5-0.5B-Instruct"]
    assert size["failed_check"] == "vocab_size"
    assert "151936" in size["reason"] and "152064" in size["reason"]
    assert size["fix"].startswith("resize the draft's embedding and lm_head to the target's 152064 rows")
    assert "TLI" not in size["fix"]  # an SGLang fix: SGLang has no TLI
    assert "variant/added" not in misses  # its vocabulary agrees: a draft, not a near miss
    # SGLang has no TLI and copying tokenizer files changes nothing there: no fix makes an unrelated vocabulary
    # work, so it is no near miss; on vLLM 0.33 TLI does (0.34 has none)
    assert "other/unrelated" not in misses
    vllm = {m["repo_id"]: m for m in run_query(TARGET, db=catalog, near_misses=True, engine="vllm",
                                               release="0.33.0")["near_misses"]}
    assert vllm["other/unrelated"]["failed_check"] == "mapping" and vllm["other/unrelated"]["outcome"] == "useless"
    assert "use_heterogeneous_vocab" in vllm["other/unrelated"]["fix"]
    assert "resize" in vllm["Qwen/Qwen2.5-0.5B-Instruct"]["fix"] and "TLI" in vllm["Qwen/Qwen2.5-0.5B-Instruct"]["fix"]
    # vLLM 0.34.0 has no TLI: the fixes follow the version
    new = {m["repo_id"]: m for m in run_query(TARGET, db=catalog, near_misses=True, engine="vllm")["near_misses"]}
    assert "other/unrelated" not in new  # no fix makes it work there: no near miss
    assert new["Qwen/Qwen2.5-0.5B-Instruct"]["fix"].startswith("resize") and "TLI" not in new[
        "Qwen/Qwen2.5-0.5B-Instruct"]["fix"]
    assert "meta-llama/Llama-3.2-1B" not in misses
    text = CliRunner().invoke(cli, ["query", "--target", TARGET, "--db", catalog, "--near-misses"]).output
    assert "near misses" in text and "fix:" in text
    assert "refused (refuses to start)" in text
    text = CliRunner().invoke(cli, ["query", "--target", TARGET, "--db", catalog, "--near-misses",
                                    "--engine", "vllm", "--engine-version", "vllm==0.33.0"]).output
    assert "useless (starts, but rejects nearly every drafted token: slower than no draft)" in text


def test_target_with_unknown_params_lists_drafts_unfiltered_by_size(catalog):
    result = run_query("who/unknown-params", db=catalog)
    assert result["drafts"] and all(d["params"] is not None for d in result["drafts"])
    assert len(run_query("who/unknown-params", db=catalog, all_members=True)["drafts"]) > 0
    res = CliRunner().invoke(cli, ["query", "--target", "who/unknown-params", "--db", catalog])
    assert res.exit_code == 0 and "size unknown" in res.output and "not filtered by size" in res.output


def test_non_ok_target_is_explained(catalog):
    res = CliRunner().invoke(cli, ["query", "--target", "broken/no-tok", "--db", catalog])
    assert res.exit_code == 3
    assert "no_tokenizer" in res.output


def test_side_from_catalog_and_check(catalog):
    side = side_from_catalog(TARGET, db=catalog)
    assert side.vocab_size == 152064 and side.tok["vocab_sha256"] == T1
    assert side.vocab is None  # no token store beside this catalog
    with pytest.raises(RepoNotFound) as e:  # the lookup's own error (exit 3, HTTP 404), not translated
        side_from_catalog("nobody/nothing", db=catalog)
    assert "indexer crawl --model nobody/nothing" in e.value.message
    res = CliRunner().invoke(cli, ["check", TARGET, "nobody/nothing", "--db", catalog])
    assert res.exit_code == 3 and "draft nobody/nothing: " in res.output
    res = CliRunner().invoke(cli, ["check", TARGET, "Qwen/small-chat", "--db", catalog])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["check", TARGET, "Qwen/Qwen2.5-0.5B-Instruct", "--db", catalog, "--json"])
    assert res.exit_code == 1
    data = json.loads(res.output)
    assert data["verdicts"]["mlx"]["compatible"] and not data["verdicts"]["sglang"]["compatible"]


def build_big_class(path) -> str:
    """One class of 300 drafts of the target's tokenizer with every kind of tie the ranking breaks: in and out of
    the size window, lineage by family or author or none, chat, base or unknown, gated, downloads None, 0 or
    repeated; plus a second, small class that agrees with it."""
    db = str(path)
    upgrade(db)
    engine = make_engine(db)
    rows = [dict(id=1, repo_id=TARGET, tokenizer_id=1, params=int(7.6 * B), author="Qwen", family="qwen2.5",
                 is_chat=True, downloads=10)]
    state = 12345
    for i in range(2, 302):
        state = (state * 1103515245 + 12345) % 2**31  # a fixed pseudo-random walk: the same catalog every run
        r = state >> 8
        rows.append(dict(id=i, repo_id=f"org{r % 7}/draft-{i}", tokenizer_id=1 if i % 29 else 2,
                         params=[int(0.05 * B), int(0.5 * B), int(1.2 * B), int(3 * B), None][r % 5],
                         author=["Qwen", "other", "third"][r % 3], family=["qwen2.5", None, "llama"][(r >> 3) % 3],
                         is_chat=[True, False, None][(r >> 5) % 3], downloads=[None, 0, 5, 5, 900, r % 1000][r % 6],
                         gated="manual" if r % 11 == 0 else None))
    with engine.begin() as conn:
        conn.execute(sa.insert(Tokenizer), [_tok(1, T1, "b" * 64, 151665, 151643),
                                            _tok(2, T2, "b" * 64, 151670, 151643)])
        conn.execute(sa.insert(Repo), [dict(row, vocab_size=152064, vocab_size_transformers=152064, status="ok",
                                            disabled=False, base_models=None) for row in rows])
    engine.dispose()
    compute(db)
    return db


def head_and_full_rankings_agree(db: str) -> tuple[int, int]:
    """Every page head_rows answers is the first rows of the full ranking; (pages answered, pages declined)."""
    from indexer.answer.scope import engine_at, resolve
    from indexer.catalog.classes import WINDOW, head_rows, rank_rows, ranked
    from indexer.catalog.reader import Reader

    answered, declined = 0, 0
    with Reader(db) as cat:
        # a stranger's 3B draft of unknown kind: few members share its lineage, so the head rarely holds a page
        stranger = cat.one("SELECT repo_id FROM repos WHERE author = 'third' AND family IS NULL AND is_chat IS NULL "
                           "AND params = :p ORDER BY id LIMIT 1", {"p": int(3 * B)})[0]
        for target in (TARGET, stranger):
            q = resolve(cat, target, engine_at("sglang", None))
            assert len(q.class_ids) == 2 and sum(r[0] for r in cat.all(
                "SELECT members FROM compat_classes WHERE engine = 'sglang'")) == 301
            for where in ("AND rc.params * 4 < :tp3 AND NOT rc.disabled", "AND NOT rc.disabled"):
                whole = ranked(cat, q.keys, q.sizes, q.class_ids, where, None)
                for limit in (1, 2, 3, 5, 8, 13, 30):
                    got = ranked(cat, q.keys, q.sizes, q.class_ids, where, limit)
                    assert got == whole[:limit], (target, where, limit)
                    for part in (f"AND rc.params BETWEEN :lo AND :hi AND {WINDOW}",
                                 f"AND (CASE WHEN {WINDOW} THEN 1 ELSE 0 END) = 0"):
                        rows = head_rows(cat, q.sizes, q.class_ids, f"{where} {part}", q.keys.sql_params(), limit)
                        if rows is None:
                            declined += 1
                        else:
                            answered += 1
                            full = rank_rows(cat, q.class_ids, f"{where} {part}", q.keys.sql_params(), limit)
                            assert rows == full, (target, where, part, limit)
    return answered, declined


def test_ranking_from_the_head_of_a_class_is_the_full_ranking(tmp_path):
    """head_rows reads a few rows of each class in download order (ix_repo_classes_class_rank) instead of sorting
    the class: every page it answers must be the first rows of the full ranking, and it must say so when it cannot
    know (then the range query answers)."""
    from indexer.answer.scope import engine_at, resolve
    from indexer.catalog.classes import WINDOW, head_rows, ranked
    from indexer.catalog.reader import Reader

    db = build_big_class(tmp_path / "big.db")
    answered, declined = head_and_full_rankings_agree(db)
    assert answered and declined  # both ways are taken
    # A catalog made before migration 0010 lacks the index: the range query ranks, to the same answer.
    cases = [(f"AND NOT rc.disabled {part}", n) for n in (1, 2, 3, 5)
             for part in (f"AND rc.params BETWEEN :lo AND :hi AND {WINDOW}", f"AND ({WINDOW}) = 0")]
    with Reader(db) as cat:
        q = resolve(cat, TARGET, engine_at("sglang", None))
        assert any(head_rows(cat, q.sizes, q.class_ids, where, q.keys.sql_params(), n) is not None
                   for where, n in cases)
    with sa.create_engine(f"sqlite:///{db}").begin() as conn:
        conn.exec_driver_sql("DROP INDEX ix_repo_classes_class_rank")
    with Reader(db) as cat:
        q = resolve(cat, TARGET, engine_at("sglang", None))
        assert all(head_rows(cat, q.sizes, q.class_ids, where, q.keys.sql_params(), n) is None for where, n in cases)
        where = "AND NOT rc.disabled"
        assert (ranked(cat, q.keys, q.sizes, q.class_ids, where, 3)
                == ranked(cat, q.keys, q.sizes, q.class_ids, where, None)[:3])


def test_ranking_from_the_head_on_postgresql(pg_url):
    """The same on PostgreSQL: its booleans, its expression index, its planner."""
    answered, declined = head_and_full_rankings_agree(build_big_class(pg_url))
    assert answered and declined


