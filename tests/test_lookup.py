"""Repo lookup: any case, Hub URLs, bare names, "did you mean", GGUF bases, over real migrated catalogs."""

import sqlite3

import pytest
import sqlalchemy as sa

from indexer.answer.lookup import RepoNotFound, find_repo_id, gguf_base, repo_ref, suggest
from indexer.answer.rule_inputs import side_from_catalog
from indexer.catalog.compute import compute
from indexer.catalog.db import make_engine, upgrade
from indexer.catalog.models import Repo, Tokenizer
from indexer.files import InputError

IDS = ["lumen-ai/Lumen-7B-Instruct", "lumen-ai/Lumen-1.5B-Instruct", "lumen-ai/Lumen-0.5B",
       "quietfox/Lumen-0.5B-Instruct-sft", "Qwen/Qwen2.5-7B-Instruct", "other/Qwen2.5-7B-Instruct",
       "gpt2"]


def _row(**kw) -> dict:
    row = dict(author=None, status="ok", tokenizer_id=None, vocab_size=None, vocab_size_transformers=None,
               disabled=False, downloads=None, reason=None, tags=None)
    row.update(kw)
    return row


def build(path, extra: list[dict] = ()) -> str:
    db = str(path)
    upgrade(db)
    engine = make_engine(db)
    with engine.begin() as conn:
        conn.execute(sa.insert(Tokenizer), [dict(
            id=1, vocab_sha256="a" * 64, base_vocab_sha256="b" * 64, vocab_len=576, max_id=575, id_holes=0,
            hf_vocab_size=576, added_tokens=[], model_type="BPE", method="fast", repo_count=0)])
        rows = [_row(repo_id=rid, author=rid.split("/")[0] if "/" in rid else None, tokenizer_id=1,
                     vocab_size=576, vocab_size_transformers=576, downloads=100 - i)
                for i, rid in enumerate(IDS)]
        conn.execute(sa.insert(Repo), rows + [_row(**e) for e in extra])
    engine.dispose()
    return db


@pytest.fixture()
def rows(tmp_path):
    con = sqlite3.connect(build(tmp_path / "c.db"))
    yield lambda sql, params: con.execute(sql, params).fetchall()
    con.close()


@pytest.mark.parametrize(("typed", "ref"), [
    ("lumen-ai/Lumen-7B-Instruct", "lumen-ai/Lumen-7B-Instruct"),
    ("https://huggingface.co/lumen-ai/Lumen-7B-Instruct", "lumen-ai/Lumen-7B-Instruct"),
    ("https://huggingface.co/lumen-ai/Lumen-7B-Instruct/", "lumen-ai/Lumen-7B-Instruct"),
    ("https://huggingface.co/lumen-ai/Lumen-7B-Instruct/tree/main", "lumen-ai/Lumen-7B-Instruct"),
    ("https://huggingface.co/lumen-ai/Lumen-7B-Instruct/blob/main/config.json", "lumen-ai/Lumen-7B-Instruct"),
    ("http://www.huggingface.co/lumen-ai/Lumen-7B-Instruct?library=transformers", "lumen-ai/Lumen-7B-Instruct"),
    ("hf.co/lumen-ai/Lumen-7B-Instruct#files", "lumen-ai/Lumen-7B-Instruct"),
    ("https://huggingface.co/gpt2/tree/main", "gpt2"),
    ("  Lumen-7B-Instruct ", "Lumen-7B-Instruct"),
])
def test_repo_ref_reads_ids_and_hub_urls(typed, ref):
    assert repo_ref(typed) == ref


def test_repo_ref_refuses_pages_that_are_not_models():
    with pytest.raises(RepoNotFound, match="dataset"):
        repo_ref("https://huggingface.co/datasets/org/data")
    with pytest.raises(RepoNotFound, match="names no repo"):
        repo_ref("https://huggingface.co/")


@pytest.mark.parametrize(("typed", "found"), [
    ("lumen-ai/Lumen-7B-Instruct", "lumen-ai/Lumen-7B-Instruct"),
    ("Lumen-AI/lumen-7b-instruct", "lumen-ai/Lumen-7B-Instruct"),
    ("https://huggingface.co/LUMEN-AI/Lumen-7B-Instruct/tree/main", "lumen-ai/Lumen-7B-Instruct"),
    ("Lumen-7B-Instruct", "lumen-ai/Lumen-7B-Instruct"),  # a bare name, unique
    ("lumen-1.5b-instruct", "lumen-ai/Lumen-1.5B-Instruct"),
    ("GPT2", "gpt2"),
])
def test_find_repo_id(rows, typed, found):
    match = find_repo_id(rows, typed)
    assert match.repo_id == found
    assert match.asked == ("" if typed == found else typed)


def test_ambiguous_bare_name_lists_every_full_id(rows):
    with pytest.raises(RepoNotFound) as e:
        find_repo_id(rows, "qwen2.5-7b-instruct")
    assert set(e.value.suggestions) == {"Qwen/Qwen2.5-7B-Instruct", "other/Qwen2.5-7B-Instruct"}
    assert "give the full id" in e.value.message


@pytest.mark.parametrize(("typed", "first"), [
    ("lumen-ai/Lumen-7B-Instrct", "lumen-ai/Lumen-7B-Instruct"),  # typo in the name
    ("lumen/Lumen-7B-Instruct", "lumen-ai/Lumen-7B-Instruct"),  # wrong organisation
    ("Lumen-0.5B-Instruct", "quietfox/Lumen-0.5B-Instruct-sft"),  # bare name, close
    ("qwen/qwen2.5-7b-instrukt", "Qwen/Qwen2.5-7B-Instruct"),
])
def test_misses_suggest_the_closest_ids(rows, typed, first):
    with pytest.raises(RepoNotFound) as e:
        find_repo_id(rows, typed)
    assert e.value.suggestions[0] == first
    assert f"did you mean {first}" in e.value.message
    assert "indexer crawl --model" in e.value.message


def test_a_miss_with_nothing_close_says_how_to_add_it(rows):
    with pytest.raises(RepoNotFound) as e:
        find_repo_id(rows, "zzz/completely-different")
    assert e.value.suggestions == []
    assert "did you mean" not in e.value.message
    assert "indexer crawl --model zzz/completely-different" in e.value.message


def test_lookups_use_the_expression_indexes(tmp_path):
    con = sqlite3.connect(build(tmp_path / "c.db"))
    plans = {}
    for name, where in (("lower", "lower(repo_id) = 'x'"),
                        ("name", "lower(substr(repo_id, instr(repo_id, '/') + 1)) = 'x'"),
                        ("range", "lower(repo_id) >= 'x' AND lower(repo_id) < 'y'")):
        plans[name] = " ".join(r[-1] for r in con.execute(f"EXPLAIN QUERY PLAN SELECT repo_id FROM repos "
                                                           f"WHERE {where}"))
    con.close()
    assert "ix_repos_repo_id_lower" in plans["lower"] and "ix_repos_repo_id_lower" in plans["range"]
    assert "ix_repos_name_lower" in plans["name"]


def test_suggestions_come_from_index_ranges_among_many_repos(tmp_path):
    many = [dict(repo_id=f"org{i % 500}/model-{i}", author=f"org{i % 500}", status="ok", disabled=False)
            for i in range(20000)]
    con = sqlite3.connect(build(tmp_path / "c.db", many))
    rows = lambda sql, params: con.execute(sql, params).fetchall()  # noqa: E731
    assert suggest(rows, "org207/model-1207x")[0] == "org207/model-1207"
    assert suggest(rows, "org207/modle-1207")[0] == "org207/model-1207"
    assert suggest(rows, "model-1207x")[0] == "org207/model-1207"
    assert suggest(rows, "lumen-ai/Lumen-7B-Instuct")[0] == "lumen-ai/Lumen-7B-Instruct"
    con.close()


def test_gguf_base_tag():
    assert gguf_base(["gguf", "base_model:quantized:lumen-ai/Lumen-7B-Instruct"]) == "lumen-ai/Lumen-7B-Instruct"
    assert gguf_base(["base_model:finetune:x/y"]) is None
    assert gguf_base(None) is None
    assert gguf_base('["base_model:quantized:a/b"]') == "a/b"  # the JSON text stdlib sqlite3 returns
    assert gguf_base("not json") is None


def test_check_side_finds_repos_like_query_and_borrows_a_gguf_base_tokenizer(tmp_path):
    gguf = [dict(repo_id="quant/Lumen-7B-Instruct-GGUF", author="quant", status="no_tokenizer", disabled=False,
                 reason="no tokenizer files", tags=["gguf", "base_model:quantized:lumen-ai/Lumen-7B-Instruct"]),
            dict(repo_id="quant/Orphan-GGUF", author="quant", status="no_tokenizer", disabled=False,
                 tags=["gguf", "base_model:quantized:nobody/absent"])]
    db = build(tmp_path / "c.db", gguf)
    compute(db)
    side = side_from_catalog("https://huggingface.co/LUMEN-AI/lumen-7b-instruct", db=db)
    assert side.name == "lumen-ai/Lumen-7B-Instruct" and side.vocab_size == 576
    with pytest.raises(RepoNotFound) as e:
        side_from_catalog("lumen-ai/Lumen-7B-Instrukt", db=db)
    assert "did you mean lumen-ai/Lumen-7B-Instruct" in e.value.message
    side = side_from_catalog("quant/Lumen-7B-Instruct-GGUF", db=db)
    assert side.name == "quant/Lumen-7B-Instruct-GGUF (tokenizer of its base lumen-ai/Lumen-7B-Instruct)"
    assert side.tok["vocab_sha256"] == "a" * 64 and side.vocab_size == 576
    with pytest.raises(InputError) as e:
        side_from_catalog("quant/Orphan-GGUF", db=db)
    assert e.value.status == "no_tokenizer"


def test_check_prints_the_repos_as_found(tmp_path):
    from click.testing import CliRunner

    from indexer.cli import cli

    gguf = [dict(repo_id="quant/Lumen-7B-Instruct-GGUF", author="quant", status="no_tokenizer",
                 tags=["gguf", "base_model:quantized:lumen-ai/Lumen-7B-Instruct"])]
    db = build(tmp_path / "c.db", gguf)
    compute(db)
    res = CliRunner().invoke(cli, ["check", "--db", db, "quant/lumen-7b-instruct-gguf",
                                   "https://huggingface.co/lumen-ai/Lumen-0.5B/tree/main"])
    assert res.exit_code == 0, res.output
    assert "target: quant/Lumen-7B-Instruct-GGUF (tokenizer of its base lumen-ai/Lumen-7B-Instruct)" in res.output
    assert "draft:  lumen-ai/Lumen-0.5B\n" in res.output
    res = CliRunner().invoke(cli, ["check", "--db", db, "lumen-ai/Lumen-7B-Instruct", "lumen-ai/lumen-0.5"])
    assert res.exit_code == 3 and res.output.count("\n") == 1 and "did you mean lumen-ai/Lumen-0.5B" in res.output


def test_repo_ids_only_turns_the_disk_off_for_its_own_thread_alone(tmp_path):
    """The site's requests run in threads: one inside repo_ids_only() never takes text for a directory, while
    another outside it still does (the CLI); the block's variable is made once, whichever thread comes first."""
    import threading

    from indexer.answer import lookup

    d = str(tmp_path)
    assert lookup.looks_like_dir(d)
    inside_entered, outside_done = threading.Event(), threading.Event()
    seen = {}

    def inside():
        with lookup.repo_ids_only():
            inside_entered.set()
            outside_done.wait(10)
            seen["inside"] = lookup.looks_like_dir(d)
        seen["after"] = lookup.looks_like_dir(d)

    def outside():
        inside_entered.wait(10)
        seen["outside"] = lookup.looks_like_dir(d)
        outside_done.set()

    threads = [threading.Thread(target=inside), threading.Thread(target=outside)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen == {"inside": False, "outside": True, "after": True}
    made = [lookup._local_dirs_var() for _ in range(3)]
    assert made[0] is made[1] is made[2]
