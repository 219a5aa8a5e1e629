"""The citation audit can fail: source trees the test writes in an engine's shape are pinned, then mutated (a raise
becomes a print, a file is deleted, a class is renamed, lines move), and the audit says changed, vanished or moved,
and exits 1. Nothing is downloaded."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from indexer.engines import ENGINES, tables
from indexer.engines.archrules import ArchRule, TypeIn
from indexer.engines.audit import (
    audit,
    citations,
    coverage,
    exit_status,
    key_of,
    load_audited,
    load_pins,
    main,
    module_citations,
    pin,
)
from indexer.engines.base import released

GENERATE = """\
def main(args):
    if args.draft_model is not None:
        draft_model, draft_tokenizer = load(args.draft_model)
        if draft_tokenizer.vocab_size != tokenizer.vocab_size:
            raise ValueError("Draft model tokenizer does not match model tokenizer.")
    return run(args)
"""
SERVER = """\
def serve(draft_model_path):
    draft_model, draft_tokenizer = load(draft_model_path)
    if draft_tokenizer.vocab_size != tokenizer.vocab_size:
        logging.warning("Draft model tokenizer does not match model tokenizer.")
"""
CACHE = """\
class ArraysCache(_BaseCache):
    def __init__(self, size):
        self.cache = [None] * size


def can_trim_prompt_cache(cache):
    return all(c.is_trimmable() for c in cache)
"""
ROWS = (
    ArchRule("generate raises", TypeIn("target", frozenset()), "refused", "", "mlx_lm/generate.py:4-5",
             anchors=('raise ValueError("Draft model tokenizer',)),
    ArchRule("server warns", TypeIn("target", frozenset()), None, "", "mlx_lm/server.py:3-4",
             anchors=("if draft_tokenizer.vocab_size != tokenizer.vocab_size:",)),
    ArchRule("arrays cache", TypeIn("target", frozenset()), "refused", "", "mlx_lm/models/cache.py:1",
             anchors=("class ArraysCache",)),
    ArchRule("trimmable", TypeIn("target", frozenset()), None, "", "mlx_lm/models/cache.py:6-7"),
)


def toy(releases=("1.0",), read_at=None):
    rows = tuple(replace(r, read_at=read_at) for r in ROWS)
    return released(releases=releases, name="toy", display="Toy", version="toy 1.0", sources={}, facts=(),
                    rule=None, class_key=(), launch=None, sizes=None, arch_rules=rows)


def tree(root: Path) -> Path:
    for rel, text in (("mlx_lm/generate.py", GENERATE), ("mlx_lm/server.py", SERVER),
                      ("mlx_lm/models/cache.py", CACHE)):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def statuses(root: Path, pins: dict) -> dict:
    return {r["where"]: (r["status"], r["now"]) for r in audit(toy(), root, pins=pins)}


def pinned(tmp_path) -> tuple[Path, dict]:
    root = tree(tmp_path / "src")
    made, failed, held = pin(toy(), root, "1.0")
    assert not failed and len(made) == 4 and set(held["1.0"].values()) == {"here"}
    return root, {"1.0": made}


def test_an_unchanged_tree_holds_and_exits_0(tmp_path):
    root, pins = pinned(tmp_path)
    results = audit(toy(), root, pins=pins)
    assert {r["status"] for r in results} == {"holds"} and coverage(results) == (4, 4)
    assert exit_status(results) == 0


def test_a_raise_that_becomes_a_print_is_changed(tmp_path):
    root, pins = pinned(tmp_path)
    gen = root / "mlx_lm/generate.py"
    gen.write_text(gen.read_text().replace("raise ValueError(", "print("))  # the condition line is untouched
    got = statuses(root, pins)
    assert got["generate raises"] == ("changed", None)
    assert got["server warns"] == ("holds", None)
    assert exit_status(audit(toy(), root, pins=pins)) == 1


def test_a_warning_that_becomes_a_raise_is_changed(tmp_path):
    root, pins = pinned(tmp_path)
    server = root / "mlx_lm/server.py"
    server.write_text(server.read_text().replace("logging.warning(", "raise ValueError("))
    assert statuses(root, pins)["server warns"] == ("changed", None)


def test_a_deleted_file_is_vanished_even_where_its_condition_is_elsewhere(tmp_path):
    root, pins = pinned(tmp_path)
    (root / "mlx_lm/server.py").unlink()  # its `if` line is also generate.py's
    assert statuses(root, pins)["server warns"] == ("vanished", None)
    # without a pin, the anchor alone (found in generate.py) does not make it "moved" either
    assert statuses(root, {})["server warns"] == ("vanished", None)


def test_a_renamed_class_is_changed_not_a_substring_hit(tmp_path):
    root, pins = pinned(tmp_path)
    cache = root / "mlx_lm/models/cache.py"
    cache.write_text(cache.read_text().replace("class ArraysCache(", "class ArraysCacheV2("))
    assert statuses(root, pins)["arrays cache"] == ("changed", None)
    assert statuses(root, {})["arrays cache"] == ("changed", None)  # the anchor matches whole words only


def test_lines_that_moved_are_found_in_their_file_or_in_another(tmp_path):
    root, pins = pinned(tmp_path)
    cache = root / "mlx_lm/models/cache.py"
    cache.write_text("# a new header\n\n" + cache.read_text())
    assert statuses(root, pins)["trimmable"] == ("moved", "mlx_lm/models/cache.py:8")
    gen = root / "mlx_lm/generate.py"
    (root / "mlx_lm/generate_cli.py").write_text("\n\n" + gen.read_text())
    gen.unlink()
    assert statuses(root, pins)["generate raises"] == ("moved", "mlx_lm/generate_cli.py:6")


def test_nothing_checked_or_an_unchecked_citation_exits_1(tmp_path):
    root = tree(tmp_path / "src")
    results = audit(toy(), root, pins={})
    assert [r["status"] for r in results if r["where"] == "trimmable"] == ["unchecked"]  # no pin, no anchor
    assert exit_status(results) == 1
    assert exit_status([]) == 1


def test_a_module_s_citations_each_at_the_release_it_was_read_at(tmp_path):
    module = tmp_path / "engine.py"
    module.write_text(textwrap.dedent('''\
        RULE = ArchRule("a", when, None, "", "src/a.py:10-12, 40")  # read at the oldest
        OLD = ArchRule("b", when, None, "", "src/b.py:5")
        ROWS = (*relined(OLD, "2.0", "src/b.py:9"),
                Ranged(value=1, since="1.1", source="src/c.py:3"),
                Ranged(value=2, until="2.0", source="src/d.py:4"))
        # 2.0 moved it: src/e.py:7
        # (and src/f.py:8, said on the line of the comment above)


        class Heads:
            release = "1.1"
            source = "models/x.py:1-2"


        class Heads2(Heads):  # takes over at 2.0: the citations Heads states hold until then
            release = "2.0"
            source = "models/x.py:3-4"
    '''))
    got = {(c["file"], c["lines"]): (c["read_at"], c["until"]) for c in module_citations(module, ("1.0", "1.1", "2.0"))}
    assert got == {("src/a.py", (10, 12)): ("1.0", None), ("src/a.py", (40, 40)): ("1.0", None),
                   ("src/b.py", (5, 5)): ("1.0", "2.0"), ("src/b.py", (9, 9)): ("2.0", None),
                   ("src/c.py", (3, 3)): ("1.1", None), ("src/d.py", (4, 4)): ("1.0", "2.0"),
                   ("src/e.py", (7, 7)): ("2.0", None), ("src/f.py", (8, 8)): ("2.0", None),
                   ("models/x.py", (1, 2)): ("1.1", "2.0"), ("models/x.py", (3, 4)): ("2.0", None)}


def test_a_moved_line_is_re_pinned_at_the_older_release_and_a_re_read_one_keeps_its_reason(tmp_path):
    """Rows read at 2.0 also answer 1.0, whose tree has the lines elsewhere (moved) or reworded (re-read)."""
    new = tree(tmp_path / "new")
    old = tree(tmp_path / "old")
    cache = old / "mlx_lm/models/cache.py"
    cache.write_text("# an older header\n" + cache.read_text())  # every cache.py line one further down
    gen = old / "mlx_lm/generate.py"
    gen.write_text(gen.read_text().replace("Draft model tokenizer does not match", "Draft tokenizer does not match"))
    engine = toy(("1.0", "2.0"), read_at="2.0")
    made, failed, _ = pin(engine, new, "2.0")
    pins = {"2.0": made}
    made_old, failed_old, held = pin(engine, old, "1.0", pins=pins)
    assert not made_old and [key_of(c) for c in failed_old] == ["mlx_lm/generate.py:4-5"]
    assert held["2.0"]["mlx_lm/models/cache.py:1"] == "mlx_lm/models/cache.py:2"
    assert held["2.0"]["mlx_lm/models/cache.py:6-7"] == "mlx_lm/models/cache.py:7-8"
    assert held["2.0"]["mlx_lm/server.py:3-4"] == "here"
    # a person re-reads the reworded raise: the same refusal, recorded with its own pin and why
    reread = {"at": "mlx_lm/generate.py:4-5", "pin": {"sha": "x", "first": "", "last": ""}, "same": "the same raise"}
    from indexer.engines.audit import Trees, pin_of

    reread["pin"] = pin_of(Trees([old]).lines(gen), 4, 5)
    _, failed_old, held = pin(engine, old, "1.0", pins=pins, same={"2.0": {"mlx_lm/generate.py:4-5": reread}})
    assert not failed_old and held["2.0"]["mlx_lm/generate.py:4-5"]["same"] == "the same raise"
    results = audit(engine, old, release="1.0", pins=pins, audited={"1.0": held})
    assert {r["status"] for r in results} == {"holds"}
    # the recorded places are what an answer at 1.0 cites
    places = {"mlx_lm/models/cache.py:1": "mlx_lm/models/cache.py:2",
              "mlx_lm/models/cache.py:6-7": "mlx_lm/models/cache.py:7-8"}
    assert tables.reline("mlx_lm/models/cache.py:1, 6-7 (x)", places) == "mlx_lm/models/cache.py:2, 7-8 (x)"
    # the reworded line read back at 2.0's place without a re-read: changed
    assert audit(engine, old, release="1.0", pins=pins, audited={"1.0": {}})[0]["status"] == "changed"


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_the_audit_of_every_release_held_for_every_citation_it_has_now(name):
    """The audit recorded at each release (audited.json, made by ``--pin`` against that release's source) covers
    exactly the citations the engine states at that release, each pinned (or anchored) where it was read, and every
    one held: on its own lines, at a re-pinned place, or re-read with a reason. A module edited without running the
    audit again fails here, without the source trees; the tables of every release load."""
    e = ENGINES[name]
    pins, audited = load_pins(name), load_audited(name)
    for release in e.releases:
        cited = citations(e, release=release)
        assert cited, (name, release)
        recorded = {(at, key) for at, held in audited.get(release, {}).items() for key in held}
        now = {(c["read_at"], key_of(c)) for c in cited}
        assert now == recorded, (release, sorted(now - recorded)[:5], sorted(recorded - now)[:5])
        for c in cited:
            assert key_of(c) in pins.get(c["read_at"], {}) or c["anchor"], (release, key_of(c))
            held = audited[release][c["read_at"]][key_of(c)]
            assert held == "here" or isinstance(held, str) or (held["same"] and held["pin"]["sha"]), (release, held)
        if name in ("vllm", "sglang", "transformers", "mlx"):
            assert tables.tables(name, release), release


def test_older_releases_answer_with_their_own_lines():
    """vLLM 0.30.0 cites its own line of the vocabulary check; SGLang 0.5.20 its own standalone worker's."""
    v = ENGINES["vllm"]
    assert v.at("0.33.0").sources["get_vocab_size() equal"].startswith("vllm/config/speculative.py:2036-2056")
    assert v.at("0.30.0").sources["get_vocab_size() equal"].startswith("vllm/config/speculative.py:1831-1851")
    s = ENGINES["sglang"]
    assert s.at("0.5.20").sources["vocab_size equal"] == "python/sglang/srt/speculative/standalone_worker_v2.py:202-232"
    assert s.at("0.5.20").heads.methods["eagle"][1] == "speculative/spec_info.py:43, models/llama_eagle.py:149"


def test_every_engine_s_citations_are_pinned_or_anchored():
    """Each citation of every engine module at its newest release can be checked (the pins in engines/data)."""
    for name, e in ENGINES.items():
        pins = load_pins(name)
        cited = citations(e)
        assert cited, name
        unchecked = [key_of(c) for c in cited if c["anchor"] is None and key_of(c) not in pins.get(c["read_at"], {})]
        assert not unchecked, (name, unchecked)


def test_the_audit_command(tmp_path, capsys):
    run = [sys.executable, "-m", "indexer.engines.audit"]
    bad = subprocess.run([*run, str(tmp_path), "--engine", "tgi==1"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and len(bad.stderr.splitlines()) == 1
    missing = subprocess.run([*run, str(tmp_path / "nope"), "--engine", "vllm==0.35.0"], capture_output=True,
                             text=True)
    assert missing.returncode == 2 and "not a directory" in missing.stderr
    # an empty tree: every citation vanished, exit 1
    assert main([str(tmp_path), "--engine", "sglang==0.5.24"]) == 1
    out = capsys.readouterr().out
    assert "vanished" in out and "0 holds" in out and "checked" in out


def test_the_extracted_tables_hold_against_their_tree_and_change_with_it(tmp_path):
    """The audit re-reads a release's tables from its tree: a target class that loses its capture method, or a
    converter registration that moves, makes the recorded table ``changed`` (exit 1)."""
    import json
    import shutil

    from indexer.engines.audit import exit_status, table_results
    from indexer.engines.extract import extract

    fixtures = Path(__file__).parent / "data" / "engine_src"
    for engine, release in (("sglang", "9.9"), ("llamacpp", "abc1234")):
        tree = tmp_path / engine
        shutil.copytree(fixtures / engine, tree)
        data = tmp_path / "data"
        (data / engine).mkdir(parents=True)
        (data / engine / f"{release}.json").write_text(json.dumps(extract(engine, tree, release)))
        held = table_results(engine, release, [tmp_path / "elsewhere", tree], data=data)
        assert held and {r["status"] for r in held} == {"holds"} and exit_status(held) == 0
        if engine == "sglang":  # Llama's class loses set_dflash_layers_to_capture
            model = tree / "python/sglang/srt/models/llama.py"
            model.write_text(model.read_text().replace("def set_dflash_layers_to_capture", "def _renamed"))
            want = {"capture_classes"}
        else:  # a blank line above the registrations moves every line the table cites
            model = tree / "conversion/llama.py"
            model.write_text("\n" + model.read_text())
            want = {"converter_architectures"}
        got = table_results(engine, release, [tree], data=data)
        assert {r["table"] for r in got if r["status"] == "changed"} == want and exit_status(got) == 1
        assert {r["status"] for r in table_results(engine, release, [tmp_path / "elsewhere"], data=data)} == \
            {"unchecked"}
