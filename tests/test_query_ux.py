"""`indexer query` as a person meets it: estimated sizes, unknown sizes, no dead ends.

Every catalog here is a real SQLite catalog made by the migrations, with repos inserted and
`compute` run over them (never hand-written classes).
"""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from tokfactory import make_model

from indexer.answer.query import QueryError, render, run_query
from indexer.catalog.compute import compute
from indexer.catalog.db import make_engine, upgrade
from indexer.catalog.models import Repo, Tokenizer
from indexer.cli import cli
from indexer.vocab.fingerprint import fingerprint_dir

B = 1_000_000_000
TARGET = "acme/Big-7B-Chat"


def _tok(pk, sha, base, size):
    return dict(id=pk, vocab_sha256=sha * 64, base_vocab_sha256=base * 64, vocab_len=size, max_id=size - 1,
                id_holes=0, hf_vocab_size=size, added_tokens=[], model_type="BPE", method="fast", repo_count=0)


def _repo(repo_id, tok, vs, *, params=None, estimate=None, active=None, source=None, **kw):
    row = dict(repo_id=repo_id, author=repo_id.split("/")[0], tokenizer_id=tok, vocab_size=vs,
               vocab_size_transformers=vs, params=params, params_estimate=estimate, params_active_estimate=active,
               params_estimate_source=source or ("config" if estimate else None), status="ok", disabled=False,
               downloads=kw.pop("downloads", 100), is_chat=kw.pop("is_chat", True), family=None, gated=None,
               base_models=None, tags=None, reason=None, model_type=None)
    row.update(kw)
    return row


REPOS = [
    _repo(TARGET, 1, 32000, estimate=int(7.24 * B)),
    _repo("acme/Small-1B-Chat", 1, 32000, estimate=int(1.1 * B), downloads=50),
    _repo("acme/Mid-3B-Chat", 1, 32000, downloads=40),  # no count, no config estimate: the name says 3B
    _repo("acme/mystery", 1, 32000, downloads=10**6),  # no size anywhere
    _repo("hub/counted", 1, 32000, params=int(0.5 * B), downloads=30),
    _repo("moe/Sparse-Chat", 1, 32000, estimate=4 * B, active=1 * B, downloads=20),
    _repo("other/huge", 1, 32000, estimate=69 * B),
    _repo("acme/Variant-0.5B", 2, 32000, estimate=int(0.5 * B)),  # same base vocabulary, other added tokens
    _repo("acme/Padded-1B", 1, 32064, estimate=1 * B),  # same mapping, other vocab_size
    _repo("solo/Only-7B", 3, 50000, estimate=7 * B),
    _repo("solo/Pal-1B", 3, 50048, estimate=1 * B),  # only llama.cpp (n_vocab within 128) and MLX accept it
    _repo("lonely/Alone-7B", 4, 60000, estimate=7 * B),
    _repo("quant/Big-7B-Chat-GGUF", None, None, status="no_tokenizer", reason="no tokenizer files",
          tags=["gguf", f"base_model:quantized:{TARGET}"], downloads=5000),
    _repo("quant/Lost-3B-GGUF", None, None, status="no_tokenizer", reason="no tokenizer files",
          tags=["gguf", "base_model:quantized:nobody/absent-3B"]),
]


def build(path, repos=REPOS, tokenizers=None) -> str:
    db = str(path)
    upgrade(db)
    engine = make_engine(db)
    with engine.begin() as conn:
        conn.execute(sa.insert(Tokenizer), tokenizers or [_tok(1, "a", "b", 32000), _tok(2, "c", "b", 32000),
                                                          _tok(3, "d", "e", 50000), _tok(4, "f", "g", 60000)])
        conn.execute(sa.insert(Repo), list(repos))
    engine.dispose()
    compute(db)
    return db


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    return build(tmp_path_factory.mktemp("ux") / "catalog.db")


def by_id(entries):
    return {e["repo_id"]: e for e in entries}


def test_ranking_uses_estimates_and_marks_them(catalog):
    result = run_query(TARGET, db=catalog)
    t = result["target"]
    assert (t["params"], t["params_source"]) == (int(7.24 * B), "config")
    drafts = by_id(result["drafts"])
    assert drafts["acme/Small-1B-Chat"]["params_source"] == "config"
    assert drafts["hub/counted"]["params_source"] == "safetensors"
    assert (drafts["acme/Mid-3B-Chat"]["params"], drafts["acme/Mid-3B-Chat"]["params_source"]) == (3 * B, "name")
    assert drafts["moe/Sparse-Chat"]["params_active"] == 1 * B
    assert "other/huge" not in drafts  # bigger than the target, by estimates
    # Inside 1/50..1/5 of 7.24B first (1.1B, 1B-active MoE of 4B is not), then by downloads.
    order = [d["repo_id"] for d in result["drafts"]]
    assert order.index("acme/Small-1B-Chat") < order.index("acme/Mid-3B-Chat")
    assert any("estimated from config" in r for r in drafts["acme/Small-1B-Chat"]["reasons"])
    text = render(result)
    assert "target: acme/Big-7B-Chat (~7.24B parameters, estimated from config)" in text
    assert "~4B (1B active)" in text and "~4B parameters, ~1B active (estimated from config)" in text
    assert "~1.1B" in text and "~3B" in text and "0.5B" not in text.split("hub/counted")[1].split("\n")[0][:9]


def test_a_repo_with_no_size_is_listed_after_the_sized_ones(catalog):
    result = run_query(TARGET, db=catalog)
    last = result["drafts"][-1]
    assert last["repo_id"] == "acme/mystery" and last["params"] is None and last["params_source"] is None
    assert all(d["params"] is not None for d in result["drafts"][:-1])
    assert "size unknown" in render(result)
    # With a limit filled by sized drafts, the unknown one is the one left out.
    assert "acme/mystery" not in by_id(run_query(TARGET, db=catalog, limit=2)["drafts"])


def test_near_misses_work_on_estimates_and_say_none(catalog):
    result = run_query(TARGET, db=catalog, near_misses=True)
    misses = by_id(result["near_misses"])
    assert "acme/Variant-0.5B" not in misses  # same base vocabulary: it agrees, a draft (flagged)
    variant = by_id(result["drafts"])["acme/Variant-0.5B"]
    assert variant["outcome"] == "works" and variant["agreement"]["basis"] == "ids"
    assert misses["acme/Padded-1B"]["failed_check"] == "vocab_size"
    assert misses["acme/Padded-1B"]["params_source"] == "config"
    res = CliRunner().invoke(cli, ["query", "--target", "lonely/Alone-7B", "--near-misses", "--db", catalog])
    assert res.exit_code == 0, res.output
    assert "near misses: none" in res.output
    res = CliRunner().invoke(cli, ["query", "--target", "lonely/Alone-7B", "--db", catalog])
    assert "near misses" not in res.output


def test_no_drafts_names_the_engines_that_have_some(catalog):
    res = CliRunner().invoke(cli, ["query", "--target", "solo/Only-7B", "--db", catalog])
    assert res.exit_code == 0, res.output
    assert "no drafts found for SGLang STANDALONE; other engines have candidates: mlx, lmstudio" in res.output
    assert "try --engine mlx" in res.output
    summary = run_query("solo/Only-7B", db=catalog)["summary"]
    assert summary["engines_with_drafts"] == ["mlx", "lmstudio"]
    # llama.cpp needs GGUF facts, derived from stored blobs: this fixture inserts repos without any; Ollama takes
    # no separate draft models at all
    assert summary["engines_without_drafts"] == ["sglang", "vllm", "transformers", "llama.cpp", "ollama"]
    res = CliRunner().invoke(cli, ["query", "--target", "lonely/Alone-7B", "--db", catalog])
    assert "no other engine has any either" in res.output and "no engine has drafts" in res.output


def test_summary_line_names_engines_and_the_cheapest_fix(catalog):
    result = run_query(TARGET, db=catalog, near_misses=True)
    s = result["summary"]
    assert s["engines_with_drafts"] == ["sglang", "vllm", "transformers", "mlx", "lmstudio"]
    # Resizing the draft's embeddings is SGLang's only fix (it has no TLI; tokenizer files change nothing).
    assert s["cheapest_fix"]["repo_id"] == "acme/Padded-1B"
    assert s["cheapest_fix"]["fix"].startswith("resize the draft's embedding and lm_head to the target's 32000 rows")
    line = render(result, near_misses=True).splitlines()[-1]
    assert line.startswith("summary: drafts on sglang, vllm, transformers, mlx, lmstudio")
    assert "cheapest near-miss fix (sglang, acme/Padded-1B): resize the draft's embedding" in line
    assert "use_heterogeneous_vocab" not in line and "copy the target's tokenizer files" not in line
    # Without drafts the fix is looked for even when --near-misses was not given.
    assert run_query("solo/Only-7B", db=catalog)["summary"]["cheapest_fix"]["repo_id"] == "solo/Pal-1B"


@pytest.mark.parametrize("typed", ["ACME/big-7b-chat", "https://huggingface.co/acme/Big-7B-Chat/tree/main",
                                   "hf.co/acme/Big-7B-Chat", "Big-7B-Chat"])
def test_targets_are_found_in_any_case_by_url_and_by_bare_name(catalog, typed):
    result = run_query(typed, db=catalog)
    assert result["target"]["repo_id"] == TARGET
    assert result["target"]["note"] == f"{typed!r} matched {TARGET}"
    assert result["drafts"]


def test_a_misspelt_target_suggests_the_closest_ids(catalog):
    res = CliRunner().invoke(cli, ["query", "--target", "acme/Big-7B-Caht", "--db", catalog])
    assert res.exit_code == 3
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: acme/Big-7B-Caht is not in this catalog; "
                                                   f"did you mean {TARGET}")
    with pytest.raises(QueryError) as e:
        run_query("https://huggingface.co/datasets/acme/data", db=catalog)
    assert "not a model repo" in e.value.message


def test_a_gguf_repo_answers_for_its_base_with_its_own_size(catalog):
    result = run_query("quant/Big-7B-Chat-GGUF", db=catalog)
    t = result["target"]
    assert t["repo_id"] == "quant/Big-7B-Chat-GGUF"
    assert (t["params"], t["params_source"]) == (7 * B, "name")  # its own, not the base's 7.24B
    assert f"tokenizer of its base {TARGET}" in t["note"]
    drafts = by_id(result["drafts"])
    assert "acme/Small-1B-Chat" in drafts and TARGET not in drafts
    assert "--model-path quant/Big-7B-Chat-GGUF" in result["drafts"][0]["launch"]
    assert "note: quant/Big-7B-Chat-GGUF has no tokenizer files" in render(result)
    with pytest.raises(QueryError) as e:
        run_query("quant/Lost-3B-GGUF", db=catalog)
    assert e.value.code == 3 and "indexer crawl --model nobody/absent-3B" in e.value.message


def test_a_local_directory_target_is_answered_from_the_catalog(tmp_path):
    arch = {"hidden_size": 512, "intermediate_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8}
    local = make_model(tmp_path / "my-private-model", config=arch)
    fp = fingerprint_dir(local)
    size = fp.vocab_len
    tok = {k: v for k, v in fp.to_dict().items() if k in Tokenizer.__table__.columns}
    tok.update(id=1, repo_count=0)
    db = build(tmp_path / "c.db", tokenizers=[tok], repos=[
        _repo("twin/Twin-Big", 1, size, params=10 * B, model_type="llama"),
        _repo("twin/Tiny-Draft", 1, size, params=1000, model_type="llama"),
        _repo("twin/Other-Size", 1, size + 64, params=1000),
    ])
    res = CliRunner().invoke(cli, ["query", "--target", str(local), "--db", db, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["target"]["repo_id"] == str(local)
    assert out["target"]["params_source"] == "config" and out["target"]["params"] > 1000
    assert "twin/Twin-Big" in out["target"]["note"] or "twin/Tiny-Draft" in out["target"]["note"]
    assert [d["repo_id"] for d in out["drafts"]] == ["twin/Tiny-Draft"]  # the twin itself may be a draft
    # A directory whose tokenizer the catalog lacks: one line, exit 3.
    stranger = make_model(tmp_path / "stranger", words=["<unk>", "<s>", "</s>", "x", "y"])
    res = CliRunner().invoke(cli, ["query", "--target", str(stranger), "--db", db])
    assert res.exit_code == 3 and "no catalog repo has its tokenizer" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_demo_catalog_lookups_and_gguf(tmp_path):
    db = tmp_path / "demo.db"
    assert CliRunner().invoke(cli, ["demo", "--no-serve", "--db", str(db)]).exit_code == 0
    res = CliRunner().invoke(cli, ["query", "--db", str(db), "--target", "Lumen-AI/lumen-7b-instruct"])
    assert res.exit_code == 0 and "target: lumen-ai/Lumen-7B-Instruct" in res.output, res.output
    # the demo's GGUF repo has its own facts (read from its header): SGLang says it loads no GGUF, llama.cpp answers
    res = CliRunner().invoke(cli, ["query", "--db", str(db), "--target", "lumen-ai/Lumen-7B-Instruct-GGUF"])
    assert res.exit_code == 0, res.output
    assert "not judged" in res.output and "tokenizer of its base" not in res.output
    res = CliRunner().invoke(cli, ["query", "--db", str(db), "--target", "lumen-ai/Lumen-7B-Instruct-GGUF",
                                   "--engine", "llama.cpp"])
    assert res.exit_code == 0 and "lumen-ai/Lumen-0.5B-Instruct-GGUF" in res.output, res.output
    res = CliRunner().invoke(cli, ["check", "--db", str(db), "lumen-ai/lumen-7b-instruct",
                                   "https://huggingface.co/lumen-ai/Lumen-0.5B-Instruct", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["verdicts"]["sglang"]["compatible"]


@pytest.fixture(scope="module")
def corpus_catalog(tmp_path_factory):
    """The corpus inserted as the crawler writes it (fingerprint facts, ConfigFacts fields onto same-named
    Repo columns, no safetensors counts), then `compute`."""
    from conftest import MODELS

    from indexer.hubsim.repos import split_flat_name
    from indexer.vocab.modelconfig import read_config

    if not MODELS.is_dir():
        pytest.skip("../shared/corpus is absent")
    toks, repos, ids = {}, [], {}
    tok_cols, repo_cols = set(Tokenizer.__table__.columns.keys()), set(Repo.__table__.columns.keys())
    for d in sorted(p for p in MODELS.iterdir() if p.is_dir()):
        fp = fingerprint_dir(d)
        if fp.vocab_sha256 not in toks:
            row = {k: v for k, v in fp.to_dict().items() if k in tok_cols}
            toks[fp.vocab_sha256] = {**row, "id": len(toks) + 1, "repo_count": 0}
        facts = {k: v for k, v in read_config(d).to_dict().items() if k in repo_cols}
        ids[d.name] = "/".join(split_flat_name(d.name))
        repos.append(_repo(ids[d.name], toks[fp.vocab_sha256]["id"], None, **facts))
    db = build(tmp_path_factory.mktemp("corpus") / "catalog.db", repos=repos, tokenizers=list(toks.values()))
    return db, ids


def test_corpus_without_safetensors_counts_still_ranks_and_finds_near_misses(corpus_catalog):
    db, ids = corpus_catalog
    cogito = ids["fetchwiki__deepcogito-cogito-v1-preview-qwen-14B"]
    qwen05 = ids["infinityarpan__qwen-25-api__Qwen2.5-0.5B-Instruct"]
    # The README's headline case: same get_vocab() mapping, vocab_size 151665 vs 151936.
    result = run_query(cogito, db=db, near_misses=True)
    assert result["target"]["params_source"] == "config"
    assert abs(result["target"]["params"] / 14.77e9 - 1) < 0.03
    misses = by_id(result["near_misses"])
    assert misses[qwen05]["failed_check"] == "vocab_size" and misses[qwen05]["params_source"] == "config"
    assert misses[qwen05]["ratio"] == pytest.approx(0.494 / 14.77, rel=0.03)
    text = render(result, near_misses=True)
    assert f"{qwen05} (~494M, 1/30)" in text
    # A 7B target no longer gets 70B and 34B "drafts": every draft is smaller, by its config estimate.
    llama7 = ids["isatyabrata__llama2-7b-chat-hf"]
    # (llama.cpp reads GGUF facts derived from stored blobs; this fixture stores none: see test_crawl_corpus)
    for engine in ("sglang", "mlx", "lmstudio"):
        drafts = run_query(llama7, db=db, engine=engine)["drafts"]
        assert all(d["params"] < 6.74e9 and d["params_source"] == "config" for d in drafts), engine
        assert ids["YouZiSoftware__lzlv_70b_fp16_hf"] not in by_id(drafts)
        assert ids["gmars__CodeFuse-CodeLlama-34B"] not in by_id(drafts)
    assert ids["swayam8624__nanoquant-private__TinyLlama-1.1B-Chat-v1.0"] in by_id(
        run_query(llama7, db=db, engine="mlx")["drafts"])


def test_lookup_estimates_and_gguf_on_postgresql(pg_url):
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from indexer.answer.rule_inputs import side_from_catalog
    from indexer.catalog.models import Base

    db = build(pg_url)
    engine = make_engine(db)
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
        plan = " ".join(r[0] for r in conn.execute(sa.text(
            "EXPLAIN SELECT repo_id FROM repos WHERE lower(substr(repo_id, strpos(repo_id, '/') + 1)) = 'x'")))
    engine.dispose()
    assert "ix_repos_name_lower" in plan
    for typed in ("ACME/big-7b-chat", "Big-7B-Chat", "https://hf.co/acme/Big-7B-Chat/tree/main"):
        assert run_query(typed, db=db)["target"]["repo_id"] == TARGET
    result = run_query(TARGET, db=db)
    assert by_id(result["drafts"])["acme/Mid-3B-Chat"]["params_source"] == "name"
    assert result["drafts"][-1]["repo_id"] == "acme/mystery"
    assert run_query("quant/Big-7B-Chat-GGUF", db=db)["target"]["params_source"] == "name"
    with pytest.raises(QueryError, match=f"did you mean {TARGET}"):
        run_query("acme/Big-7B-Caht", db=db)
    assert side_from_catalog("acme/big-7b-CHAT", db=db).name == TARGET


def test_near_misses_are_one_order_cut_at_every_limit(tmp_path):
    """Issue 18: near misses used to reorder with --limit; now every limit shows a prefix of one list."""
    repos = [_repo(TARGET, 1, 32000, estimate=int(7.24 * B))]
    repos += [_repo(f"pad/P{i}-1B", 1, 32064 + 64 * (i % 3), estimate=B, downloads=10 * (i % 4)) for i in range(9)]
    repos += [_repo(f"far/F{i}-1B", 2, 32000, estimate=int(0.2 * B * (i + 1)), downloads=i) for i in range(6)]
    toks = [_tok(1, "a", "b", 32000), _tok(2, "c", "z", 32000)]  # 2: another base vocabulary: useless
    db = build(tmp_path / "c.db", repos=repos, tokenizers=toks)
    # vLLM 0.33: the useless ones have a fix (TLI), so all 15 are near misses (SGLang: the 9 of another size only)
    full = [m["repo_id"] for m in run_query(TARGET, db=db, engine="vllm", release="0.33.0", near_misses=True,
                                            limit=100)["near_misses"]]
    assert len(full) == 15
    assert len(run_query(TARGET, db=db, near_misses=True, limit=100)["near_misses"]) == 9
    for limit in range(1, 16):
        got = [m["repo_id"] for m in run_query(TARGET, db=db, engine="vllm", release="0.33.0", near_misses=True,
                                               limit=limit)["near_misses"]]
        assert got == full[:limit], limit


def test_class_size_and_ratio_bounds_are_worded_right(tmp_path):
    repos = [_repo(TARGET, 1, 32000, params=int(7.2 * B)), _repo("edge/Edge-1.5B", 1, 32000, params=int(1.5 * B)),
             _repo("in/Fifth-1.44B", 1, 32000, params=int(1.44 * B)), _repo("solo/One-7B", 2, 32000, params=7 * B)]
    db = build(tmp_path / "c.db", repos=repos, tokenizers=[_tok(1, "a", "b", 32000), _tok(2, "c", "x", 32000)])
    result = run_query(TARGET, db=db)
    reasons = {d["repo_id"]: " ".join(d["reasons"]) for d in result["drafts"]}
    assert "a little over 1/5 of the target's 7.2B" in reasons["edge/Edge-1.5B"]
    assert "1/5 of the target's 7.2B" in reasons["in/Fifth-1.44B"]
    assert "(3 repos)" in render(result)
    one = render(run_query("solo/One-7B", db=db, engine="vllm"))
    assert "(1 repo)" in one and "(1 repos)" not in one


def test_the_summary_probe_reads_agreeing_classes_only_when_the_target_s_own_class_has_no_draft(catalog):
    """A scope resolved probe_only, as the summary line asks each other engine: the same yes/no as a full query, and as
    the drafts it lists, for every repo as target on every engine; and a target whose drafts all sit in classes
    that agree with its own is a yes."""
    from indexer.answer.members import _probe, has_candidates
    from indexer.answer.pipeline import drafts
    from indexer.answer.scope import engine_at, resolve
    from indexer.catalog.reader import Reader
    from indexer.engines import ENGINES
    from indexer.errors import QueryError

    through_agreement = 0
    with Reader(catalog) as cat:
        for (repo_id,) in cat.all("SELECT repo_id FROM repos ORDER BY repo_id"):
            for engine in ENGINES:
                try:
                    full = resolve(cat, repo_id, engine_at(engine, None))
                except QueryError:
                    continue
                probe = resolve(cat, repo_id, engine_at(engine, None), probe_only=True)
                listed = bool(drafts(cat, full, None, 10))
                assert has_candidates(cat, probe) == has_candidates(cat, full) == listed, (repo_id, engine)
                own = resolve(cat, repo_id, engine_at(engine, None), probe_only=True)
                if has_candidates(cat, full) and not _probe(cat, own, list(own.class_ids)):
                    through_agreement += 1
    assert through_agreement
