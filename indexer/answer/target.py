"""Whom a query answers for: a catalog repo (any case, a Hub URL, a bare name), a GGUF repo by its base, a local
model directory by its catalog twin, or a local GGUF file by its llama.cpp class; read through one
:class:`~indexer.catalog.reader.Reader`. On the interactive path: stdlib only at import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import deferred
from .. import engines as registry
from ..catalog.classes import engine_fact
from ..catalog.reader import Reader, json_value
from ..catalog.repofacts import TARGET_KEYS, gguf_twin, target_row, tokenizer_by_sha, twins
from ..errors import EXIT_NOT_FOUND, QueryError
from ..files import InputError
from ..vocab.params import best_params
from .lookup import find_repo_id, gguf_base, local_gguf_arg, looks_like_dir

# What a target takes from the repo whose tokenizer it borrows (a GGUF repo's base, a local directory's twin).
TOKENIZER_KEYS = ("tokenizer_id", "vocab_sha256", "base_vocab_sha256", "max_id", "vocab_len", "hf_vocab_size",
                  "vocab_size", "vocab_size_transformers")


@dataclass
class Target:
    """Whom the answer is for, and whose class memberships answer it (see indexer/answer/lookup.py)."""

    facts: dict  # TARGET_KEYS, with params / params_source / params_active the best known size
    class_pk: int  # the catalog repo whose classes are used: the target, a GGUF repo's base, a directory's twin
    exclude_pk: int  # never suggested as a draft of itself
    note: str | None = None  # how the target was found, when not by its exact id
    gguf_file: str | None = None  # a local GGUF file: only GGUF-loading engines answer, from its own facts
    # facts read once for every engine a query asks (archrank.arch_of)
    memo: dict = field(default_factory=dict, compare=False, repr=False)


def _with_size(t: dict, name: str) -> dict:
    """The Hub's count, else the config estimate, else the size in the name (indexer/vocab/params.py)."""
    est = best_params(t["params"], t["params_estimate"], t["params_estimate_source"], name,
                      t["params_active_estimate"])
    t.update(params=est.total if est else None, params_source=est.source if est else None,
             params_active=est.active if est else None)
    return t


def resolve_target(cat: Reader, target: str) -> Target:
    """A catalog repo (any case, a Hub URL, a bare name), a GGUF repo by its base, or a local directory."""
    if looks_like_dir(target) or target.lower().endswith(".gguf"):

        try:
            gguf_path = local_gguf_arg(target)
        except InputError as e:
            msg = e.message if e.message.startswith(f"{target}: ") else f"{target}: {e.message}"
            raise QueryError(f"target {msg}") from None
        if gguf_path is not None:
            return _local_gguf_target(cat, target, gguf_path)
        return _local_target(cat, target)
    match = find_repo_id(cat.all, target, cat.dialect)  # RepoNotFound is a QueryError (exit 3, 404)
    t = target_row(cat, match.repo_id)
    assert t is not None  # find_repo_id found it
    note = f"{match.asked!r} matched {t['repo_id']}" if match.asked else None
    class_pk = t["pk"]
    if t["status"] != "ok":
        base_id = gguf_base(t["tags"]) if t["tokenizer_id"] is None else None
        base = target_row(cat, base_id) if base_id else None
        if base is None or base["status"] != "ok":
            why = f" ({t['reason']})" if t["reason"] else ""
            if base_id:
                fix = f"its base_model:quantized tag names {base_id}: add it with `indexer crawl --model {base_id}`"
            elif t["status"] == "gated":  # a recrawl without access changes nothing
                fix = ("request access on the Hub, then crawl it with that account's token (HF_TOKEN): "
                       f"`indexer crawl --model {t['repo_id']}`")
            else:
                fix = f"recrawl it with `indexer crawl --model {t['repo_id']}`"
            raise QueryError(f"{t['repo_id']} is in the catalog with status {t['status']}{why}, so it has no "
                             f"compatibility class; {fix}", EXIT_NOT_FOUND)
        t.update({k: base[k] for k in TOKENIZER_KEYS})
        class_pk = base["pk"]
        note = ((note + "; " if note else "") + f"{t['repo_id']} has no tokenizer files: answered with the "
                f"tokenizer of its base {base['repo_id']} (base_model:quantized tag); the size is its own")
    return Target(_with_size(t, t["repo_id"]), class_pk, class_pk, note,
                  gguf_file=hub_gguf(cat, class_pk, t["repo_id"]) if t["tokenizer_id"] is None else None)


def hub_gguf(cat: Reader, pk: int, repo_id: str) -> str | None:
    """``REPO:QUANT`` when the repo is a GGUF repo whose header was read (its engine facts say so)."""
    gguf = engine_fact(cat, pk, "gguf")
    if gguf is None:
        return None
    return hub_gguf_name(repo_id, json_value(gguf))


def hub_gguf_name(repo_id: str, facts) -> str | None:
    """``REPO:QUANT`` for a GGUF repo read from its header (what llama-server -hf takes), else None."""
    if not isinstance(facts, dict) or facts.get("source") != "read":
        return None
    return f"{repo_id}:{facts['quant']}" if facts.get("quant") else repo_id


def _without_path(message: str, *paths) -> str:
    """A reader's message without the path it begins with: the answer says the path once, in its own words."""
    for p in paths:
        message = message.removeprefix(f"{p}: ").removeprefix(f"{Path(p)}: ")
    return message


def _local_target(cat: Reader, path: str) -> Target:
    """A local model directory, answered as the catalog repo with the same tokenizer and vocab sizes."""
    try:
        directory, config, fp = deferred.localdir.read_dir(path)
    except InputError as e:
        raise QueryError(f"target {path}: {_without_path(e.message, path)}") from None
    tok = tokenizer_by_sha(cat, fp.vocab_sha256)
    found = twins(cat, tok) if tok is not None else []
    same = [tw for tw in found if tw[1] == config.vocab_size and tw[2] == config.vocab_size_transformers]
    if not same:
        had = sorted({f"{tw[1]}" for tw in found})
        why = (f"its tokenizer is in the catalog, but only with config vocab_size {', '.join(had)}, not "
               f"{config.vocab_size}" if found else
               f"no catalog repo has its tokenizer (get_vocab() sha256 {fp.vocab_sha256[:12]})")
        raise QueryError(f"target {path}: {why}; compare it with a draft by `indexer check {path} DRAFT`",
                         EXIT_NOT_FOUND)
    same.sort(key=lambda tw: tw[3] != config.model_type)
    twin = target_row(cat, same[0][0])
    assert twin is not None  # twins() found it
    t = dict.fromkeys(TARGET_KEYS)
    t.update({k: twin[k] for k in TOKENIZER_KEYS}, pk=-1, repo_id=str(path), status="ok",
             params_estimate=config.params_estimate, params_active_estimate=config.params_active_estimate,
             params_estimate_source=config.params_estimate_source)
    note = (f"local directory {path}: its tokenizer and vocab sizes are those of {twin['repo_id']} in the "
            "catalog, so it is answered from that repo's classes")
    return Target(_with_size(t, directory.resolve().name), twin["pk"], -1, note)


def _local_gguf_target(cat: Reader, arg: str, path) -> Target:
    """A local GGUF file, answered as the catalog repo whose llama.cpp class has the same GGUF signature
    (its own header's facts: vocab type, add_bos/eos with their ids, token texts)."""
    try:
        f = deferred.gguf_file.read_gguf(path)
    except InputError as e:
        raise QueryError(f"target {arg}: {_without_path(e.message, arg, path)}") from None
    t = dict.fromkeys(TARGET_KEYS)
    t.update(pk=-1, repo_id=str(arg), status="ok")
    if not f.vocab.converted:
        raise QueryError(f"target {arg}: {f.vocab.error}")
    sha256 = f.vocab.tokens_sha256()
    assert sha256 is not None  # a converted vocabulary has its tokens
    sig = registry.gguf_signature(f.vocab, sha256)
    twin = gguf_twin(cat, registry.GGUF_ENGINE, sig)
    if twin is None:
        raise QueryError(f"target {arg}: no catalog repo has its GGUF vocabulary ({f.vocab.vocab_type}, n_vocab "
                         f"{f.vocab.n_vocab}, signature {sig[:12]}); compare it with a draft by "
                         f"`indexer check {arg} DRAFT`", EXIT_NOT_FOUND)
    note = (f"local GGUF {path}: its own vocabulary facts (read from the file) equal those of {twin[1]} in the "
            "catalog, so it is answered from that repo's llama.cpp class")
    return Target(_with_size(t, path.name), twin[0], -1, note, gguf_file=str(path))

