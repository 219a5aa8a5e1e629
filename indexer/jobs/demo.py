"""``indexer demo``: an offline tour on a fresh machine.

Builds a small demo hub at run time (tiny BPE tokenizers made with the ``tokenizers``
library, three families, the tricky cases the rules exist for), serves it with the Hub imitation on
127.0.0.1, crawls it into a catalog (default ``data/demo.db``), computes the classes, then serves the
catalog with datasette. Nothing leaves the machine.

Tricky cases in the demo hub (target ``lumen-ai/Lumen-7B-Instruct``):
* ``lumen-ai/Lumen-0.5B-Instruct``, ``quietfox/Lumen-0.5B-Instruct-sft``: same tokenizer, same vocab_size
  → every engine accepts.
* ``lumen-ai/Lumen-1.5B-Instruct``: same tokenizer, config vocab_size padded to another multiple
  → SGLang and vLLM reject, llama.cpp and MLX accept (the Qwen2.5-0.5B / 7B case).
* ``lumen-ai/Lumen-0.5B``: the base tokenizer without the chat tokens → mappings differ (SGLang rejects).
* ``corvid-labs/Corvid-1B``: same vocab_size, a different token→id mapping → transformers would
  treat it as the same tokenizer and silently corrupt output.
* ``lumen-ai/Lumen-70B-Instruct``: gated, yet answered with no access and no download, because its public
  re-upload ``amberlab/Lumen-70B-Instruct`` holds byte-identical files (same blob ids in paths-info).
* GGUF-only repos (no tokenizer files): two quants of the target, a quant of the 0.5B draft, and a
  fine-tune's quant with a renamed chat token; their facts are read from one GGUF header each (llama.cpp
  judges them, the other engines say they load no GGUF).
* a gated repo no public repo copies (``corvid-labs/Corvid-70B-Instruct``): it gets a row with a status,
  never dropped.

The hub stays in ``demo-hub/`` beside the catalog (:func:`demo_hub_dir`) for the README examples.

Last, the catalog is published to a dataset repo of a second, empty Hub imitation (``publish --to-hub``) and
pulled back into a temp directory (``pull``), to show both on the real client and protocol (:func:`round_trip`).
The imitation keeps its datasets in ``demo-datasets/`` beside the catalog (:func:`demo_datasets_dir`).
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import sqlite3
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gguf.constants import GGUFValueType
from huggingface_hub import constants
from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
from sqlalchemy import func, select
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from ..catalog.compute import compute
from ..catalog.db import DEFAULT_DEMO_DB, open_catalog, resolve_url, session_factory, sqlite_path, upgrade
from ..catalog.dburl import sqlite_file
from ..catalog.models import Repo
from ..crawl.loop import CrawlOptions, crawl
from ..gguf.predict import predict_gguf
from ..hubsim import HubServer
from ..hubsim.gguf_repos import write_vocab_gguf
from ..hubsim.repos import HUB_META_FILE, hub_date
from ..hubsim.synthetic import build_bpe_tokenizer, random_merges
from ..scratch import scratch_dir
from .hubpublish import publish_to_hub
from .pull import pull

DEMO_TARGET = "lumen-ai/Lumen-7B-Instruct"
DEMO_DRAFT = "lumen-ai/Lumen-0.5B-Instruct"  # the pair the demo suggests checking: it works on every draft engine
DEMO_DRAFT_MISMATCH = "lumen-ai/Lumen-1.5B-Instruct"
DEMO_GATED = "lumen-ai/Lumen-70B-Instruct"
DEMO_GATED_COPY = "amberlab/Lumen-70B-Instruct"
CHAT_TOKENS = ("<|im_start|>", "<|im_end|>")
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
          " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
          "{% endif %}")
EPOCH = 1704067200  # 2024-01-01

# family -> (org, model_type, architecture, tokenizer seed, merges, (bos, eos, unk))
FAMILIES = {
    "Lumen": ("lumen-ai", "llama", "LlamaForCausalLM", 11, 270, ("<s>", "</s>", "<unk>")),  # 556 tokens
    "Corvid": ("corvid-labs", "mistral", "MistralForCausalLM", 22, 300, ("<s>", "</s>", "<unk>")),
    "Basalt": ("basalt-ai", "qwen2", "Qwen2ForCausalLM", 33, 420, (None, "<|endoftext|>", None)),
}
SENTENCEPIECE_STYLE = {"Lumen"}  # families with Llama-2-style byte-fallback tokenizers (the others: byte-level BPE)
# repo id, family, chat tokens?, config vocab_size, params, downloads, base model, extra meta / kind
REPOS: list[tuple[str, str, bool, int, int | None, int, str | None, dict[str, Any]]] = [
    ("lumen-ai/Lumen-7B", "Lumen", False, 576, 7_000_000_000, 81_000, None, {}),
    (DEMO_TARGET, "Lumen", True, 576, 7_200_000_000, 240_000, "lumen-ai/Lumen-7B", {}),
    ("lumen-ai/Lumen-0.5B-Instruct", "Lumen", True, 576, 500_000_000, 52_000, None, {}),
    ("lumen-ai/Lumen-0.5B", "Lumen", False, 576, 490_000_000, 9_000, None, {}),
    (DEMO_DRAFT_MISMATCH, "Lumen", True, 640, 1_500_000_000, 31_000, None, {}),
    ("quietfox/Lumen-0.5B-Instruct-sft", "Lumen", True, 576, 500_000_000, 310,
     "lumen-ai/Lumen-0.5B-Instruct", {}),
    (DEMO_GATED, "Lumen", True, 576, 70_000_000_000, 12_000, None, {"gated": "manual"}),
    ("lumen-ai/Lumen-7B-Instruct-GGUF", "Lumen", True, 576, None, 4_000, DEMO_TARGET,
     {"no_tokenizer": True,
      "gguf": {"Lumen-7B-Instruct-Q4_K_M.gguf": (15, 44), "Lumen-7B-Instruct-Q8_0.gguf": (7, 76)}}),
    ("corvid-labs/Corvid-8B-Instruct", "Corvid", True, 576, 8_000_000_000, 67_000, None, {}),
    ("corvid-labs/Corvid-1B", "Corvid", False, 576, 1_000_000_000, 15_000, None, {}),
    ("basalt-ai/Basalt-3B-Instruct", "Basalt", True, 704, 3_000_000_000, 44_000, None, {}),
    ("basalt-ai/Basalt-0.3B-Instruct", "Basalt", True, 704, 300_000_000, 8_800, None, {}),
    ("amberlab/Basalt-0.3B-Instruct-ko", "Basalt", True, 704, 300_000_000, 95,
     "basalt-ai/Basalt-0.3B-Instruct", {}),
    ("lumen-ai/Lumen-0.5B-Instruct-GGUF", "Lumen", True, 576, None, 2_600, "lumen-ai/Lumen-0.5B-Instruct",
     {"no_tokenizer": True, "gguf": {"Lumen-0.5B-Instruct-Q8_0.gguf": (7, 12)}}),
    # a fine-tune's quant whose converter run renamed a chat token: llama.cpp compares token texts from id 5
    ("quietfox/Lumen-0.5B-Instruct-sft-GGUF", "Lumen", True, 576, None, 140, "quietfox/Lumen-0.5B-Instruct-sft",
     {"no_tokenizer": True, "gguf": {"Lumen-0.5B-Instruct-sft-Q4_K_M.gguf": (15, 9)},
      "rename": {"<|im_start|>": "<|tool_call|>"}}),
    # a public re-upload of the gated 70B (byte-identical files): the gated original is answered from it
    (DEMO_GATED_COPY, "Lumen", True, 576, 70_000_000_000, 640, None, {}),
    ("corvid-labs/Corvid-70B-Instruct", "Corvid", True, 576, 70_000_000_000, 5_000, None, {"gated": "auto"}),
]



def _dumps(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def _added(content: str) -> dict:
    return {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False, "special": True}


def _tokenizer_files(family: str, chat: bool) -> dict[str, str]:
    """tokenizer.json + tokenizer_config.json + special_tokens_map.json for a family (deterministic)."""
    _, _, _, seed, merges, (bos, eos, unk) = FAMILIES[family]
    specials = list(dict.fromkeys(t for t in (bos, eos, unk) if t))
    if family in SENTENCEPIECE_STYLE:
        tok = _byte_fallback_bpe(random.Random(seed), merges, specials, unk)
    else:
        tok = Tokenizer.from_str(build_bpe_tokenizer(random.Random(seed), merges, specials).decode())
    if chat:
        tok.add_special_tokens(list(CHAT_TOKENS))
    decoder = {str(tok.token_to_id(t)): _added(t) for t in specials + (list(CHAT_TOKENS) if chat else [])}
    cfg = {"added_tokens_decoder": decoder, "bos_token": bos, "eos_token": eos,
           "clean_up_tokenization_spaces": False, "model_max_length": 4096,
           "tokenizer_class": "PreTrainedTokenizerFast"}
    if unk:
        cfg["unk_token"] = unk
    if chat:
        cfg["chat_template"] = CHATML
    smap = {k: v for k, v in (("bos_token", bos), ("eos_token", eos), ("unk_token", unk)) if v}
    return {"tokenizer.json": tok.to_str(pretty=True) + "\n", "tokenizer_config.json": _dumps(cfg),
            "special_tokens_map.json": _dumps(smap)}


def _byte_fallback_bpe(rng: random.Random, n_merges: int, specials: list[str], unk: str | None):
    """A Llama-2-style tokenizer.json: BPE over ``▁``-marked pieces with byte fallback (<0x00>..<0xFF>).

    llama.cpp's converter takes such a Llama repo through its llama-hf path (vocab type SPM, no BPE
    pre-tokenizer hash to recognise: ``indexer/gguf/vocabpaths.py`` ``_llama_hf``), so the demo shows
    llama.cpp drafts; the byte-level families show what it refuses.
    """
    vocab = {t: i for i, t in enumerate(specials)}
    vocab.update({f"<0x{b:02X}>": len(vocab) + b for b in range(256)})
    letters = list("abcdefghijklmnopqrstuvwxyz\u2581")
    vocab.update({c: len(vocab) + i for i, c in enumerate(letters)})
    merges = random_merges(rng, vocab, letters, n_merges)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, byte_fallback=True, unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens(specials)
    return tok


def _shape_for(params: int) -> dict:
    """Layer sizes whose config estimate (indexer.vocab.params) is the repo's stated size within 5%.

    A local copy of a demo repo has no safetensors count, so ``query --target DIR`` sizes it from its
    config.json: the shape must say 7B where the Hub says 7B.
    """
    layers = 32 if params >= 5e9 else 24 if params >= 1e9 else 16
    hidden = max(64, round(math.sqrt(params / (12 * layers)) / 64) * 64)  # 4h² attention + 3·h·(8h/3) MLP
    return {"hidden_size": hidden, "intermediate_size": round(8 * hidden / 3 / 64) * 64,
            "num_hidden_layers": layers, "num_attention_heads": hidden // 64, "num_key_value_heads": hidden // 64}


def build_demo_hub(out_dir) -> dict:
    """Write the demo hub (``owner/name/...`` + ``hub.json``) into ``out_dir``; returns its metadata."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meta: dict[str, dict] = {}
    tok_cache: dict[tuple, dict] = {}
    for i, (rid, fam, chat, vocab_size, params, downloads, base, extra) in enumerate(REPOS):
        org, model_type, arch, *_rest = FAMILIES[fam]
        bos, eos, _unk = FAMILIES[fam][5]
        repo_dir = out / rid
        repo_dir.mkdir(parents=True, exist_ok=True)
        files: dict[str, str] = {}
        if not extra.get("no_tokenizer"):
            key = (fam, chat)
            if key not in tok_cache:
                tok_cache[key] = _tokenizer_files(fam, chat)
            files.update(tok_cache[key])
            tok = json.loads(files["tokenizer.json"])
            ids = {t["content"]: t["id"] for t in tok["added_tokens"]}
            config = {"architectures": [arch], "model_type": model_type, "vocab_size": vocab_size,
                      **_shape_for(params or 0),
                      "torch_dtype": "bfloat16", "transformers_version": "4.44.0",
                      **({"bos_token_id": ids[bos]} if bos else {}), "eos_token_id": ids[eos]}
            files["config.json"] = _dumps(config)
        else:
            files["README.md"] = f"# {rid}\n\nGGUF weights only: no tokenizer files, no config.json.\n"
        for name, text in files.items():
            (repo_dir / name).write_text(text, encoding="utf-8")
        created = EPOCH + i * 86400 * 9
        tags = (["gguf", model_type, "text-generation"] if extra.get("gguf") else
                ["transformers", "safetensors", model_type, "text-generation"])
        if chat:
            tags.append("conversational")
        m: dict[str, Any] = {"createdAt": hub_date(created), "lastModified": hub_date(created + 86400 * 3),
             "downloads": downloads, "likes": downloads // 300, "pipeline_tag": "text-generation",
             "library_name": "gguf" if extra.get("gguf") else "transformers", "tags": tags}
        if params:
            m["params"] = params
        if base:
            m["baseModels"] = [base]
            relation = "quantized" if extra.get("no_tokenizer") else "finetune"  # a GGUF repo quantizes its base
            m["tags"] += [f"base_model:{base}", f"base_model:{relation}:{base}"]
        if extra.get("gated"):
            m["gated"] = extra["gated"]
        meta[rid] = m
    for rid, _fam, _chat, _vs, _params, _dl, base, extra in REPOS:
        if extra.get("gguf"):
            assert base is not None  # a GGUF repo quantizes its base
            _gguf_repo(out, rid, base, extra)
    (out / HUB_META_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8")
    families = "\n".join(
        f'[[family]]\nname = "{name}"\nauthors = ["{spec[0]}"]\npatterns = ["{name.lower()}*"]\n'
        f'search = ["{name.lower()}"]\n'
        for name, spec in FAMILIES.items()
    )
    (out / "families.toml").write_text(families, encoding="utf-8")
    return meta


def _gguf_repo(out: Path, rid: str, base: str, extra: dict) -> None:
    """The quants of ``base`` as llama.cpp's converter would write its vocabulary (indexer.gguf.predict predicts it),
    written with the gguf package's GGUFWriter and padded like real multi-GB files (sparse)."""
    vocab = predict_gguf(out / base)
    assert vocab.tokens is not None  # predicted from the base's files
    rename = {vocab.tokens.index(old): new for old, new in extra.get("rename", {}).items()}
    config = json.loads((out / base / "config.json").read_text(encoding="utf-8"))
    # The shape keys llama.cpp's converter writes from the base's config (conversion/base.py:1435-1454 at the
    # pinned llama.cpp: block_count, embedding_length, feed_forward_length, head_count, head_count_kv).
    shape = [(f"llama.{key}", config[field], GGUFValueType.UINT32) for key, field in (
        ("block_count", "num_hidden_layers"), ("embedding_length", "hidden_size"),
        ("feed_forward_length", "intermediate_size"), ("attention.head_count", "num_attention_heads"),
        ("attention.head_count_kv", "num_key_value_heads"))]
    for name, (file_type, padded_mb) in extra["gguf"].items():  # (general.file_type, size padded to, sparse)
        path = write_vocab_gguf(out / rid / name, vocab, rename=rename, file_type=file_type,
                                name=rid.split("/")[1].removesuffix("-GGUF"), chat_template=CHATML, arch="llama",
                                extra=shape)
        os.truncate(path, max(path.stat().st_size, padded_mb << 20))


@contextmanager
def _env(**values):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update({k: v for k, v in values.items() if v is not None})
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def _online_for_local_hub():
    """The demo talks only to its own Hub imitation on 127.0.0.1, so an offline user's HF_HUB_OFFLINE=1 must
    not block it. huggingface_hub reads the setting once, at import (``constants.py:194``), and every request
    checks ``constants.HF_HUB_OFFLINE`` through ``is_offline_mode`` (``constants.py:197-213``,
    ``utils/_http.py:293-296``): lift it for the demo crawl only."""
    old = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = False
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = old


def demo_hub_dir(db: str | None = DEFAULT_DEMO_DB) -> Path:
    """Where the demo leaves its hub: ``demo-hub/`` beside a SQLite catalog, else ``data/demo-hub``.

    It stays after the demo so the README's examples (``fingerprint``, ``crawl --family Lumen`` with
    ``INDEXER_FAMILIES=data/demo-hub/families.toml``) have real directories and families to work on.
    """
    db = db or DEFAULT_DEMO_DB
    if "://" not in db:
        return Path(db).parent / "demo-hub"  # as the user gave it: the printed path is the one to type
    path = sqlite_path(resolve_url(db))
    return (path.parent if path is not None else Path("data")) / "demo-hub"


def demo_datasets_dir(db: str | None = DEFAULT_DEMO_DB) -> Path:
    """Where the demo keeps the dataset repos it publishes to: ``demo-datasets/`` beside ``demo-hub/``, so
    ``python -m indexer.hubsim DIR/demo-hub --datasets DIR/demo-datasets`` serves them to ``indexer pull``."""
    return demo_hub_dir(db).with_name("demo-datasets")


def build_demo_catalog(db: str | None = DEFAULT_DEMO_DB, *, log=print) -> dict:
    """Demo hub → Hub imitation on 127.0.0.1 → crawl → compute. Returns {"crawl", "compute", "db"}."""
    db = db or DEFAULT_DEMO_DB
    hub_dir = demo_hub_dir(db)
    if hub_dir.exists():
        shutil.rmtree(hub_dir)  # rebuilt from scratch: deterministic, so a rerun crawls it as unchanged
    meta = build_demo_hub(hub_dir)
    log(f"demo hub: {len(meta)} repos in 3 families, tokenizers built with the `tokenizers` library, in {hub_dir}")
    with _env(INDEXER_FAMILIES=str(hub_dir / "families.toml"), HF_HUB_OFFLINE=None,
              HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_PROGRESS_BARS="1"):
        discard_damaged(db, log)
        upgrade(db)
        with HubServer(str(hub_dir)) as hub, _online_for_local_hub():
            log(f"Hub imitation serving at {hub.endpoint}")
            summary = crawl(db, CrawlOptions(all=True, endpoint=hub.endpoint, token=False, quiet=True),
                            progress=False)
    held = _statuses(db)  # the catalog's state, not this run's: a rerun lists only what changed
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(held.items())) or "none"
    since = " (modified since the last crawl)" if summary["listed"] < sum(held.values()) else ""
    log(f"crawled: listed {summary['listed']}{since}, new {summary['new']}, changed {summary['changed']}, "
        f"unchanged {summary['unchanged']}, failed {summary['failed']}; catalog: {sum(held.values())} repos, "
        f"statuses: {statuses}")
    gated = _status_of(db, DEMO_GATED)
    if gated is not None:
        log(f"gated {DEMO_GATED}: {gated[0]} ({gated[1]})")

    stats = compute(db)
    log(f"computed compatibility classes for {stats.get('repos')} repos")
    trip = round_trip(db, log=log)
    return {"db": resolve_url(db), "crawl": summary, "compute": stats, "round_trip": trip}


DEMO_DATASET = "demo/catalog"


def round_trip(db: str, *, log=print) -> dict:
    """Publish the catalog to a dataset of an empty Hub imitation and pull it into a temp dir: one log line."""
    token = "demo-write-token"  # the imitation's own; never written anywhere
    bars_were_off = are_progress_bars_disabled()
    disable_progress_bars()
    datasets = demo_datasets_dir(db)  # kept: `indexer pull --from demo/catalog` can be tried afterwards
    try:
        with scratch_dir(prefix="indexer-demo-dataset-") as tmp, _online_for_local_hub(), \
                HubServer(str(_empty(Path(tmp) / "models")), tokens={token: "write"},
                          dataset_dir=str(_empty(datasets))) as hub:
            done = publish_to_hub(db, DEMO_DATASET, endpoint=hub.endpoint, token=token)
            back = pull(str(Path(tmp) / "pulled" / "catalog.db"), repo=DEMO_DATASET, endpoint=hub.endpoint,
                        token=token, progress=False)
    finally:
        if not bars_were_off:
            enable_progress_bars()
    same = "equal" if back["sha256"] == done["manifest"]["snapshot"]["sha256"] else "DIFFERENT"
    log(f"published the catalog to the imitation's dataset {DEMO_DATASET} (publish --to-hub; kept in {datasets}) "
        f"and pulled it back (pull): sha256 {same}, {back['token_files']} token files")
    return {"commit": done["commit"], "sha256": back["sha256"], "same": same == "equal"}


def _empty(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def discard_damaged(db: str, log=print) -> bool:
    """Delete the demo's SQLite catalog when SQLite cannot read it (the demo rebuilds its own catalog: a damaged
    one is never a dead end); True when it did."""
    damaged = _damaged_sqlite(db)
    if damaged is None:
        return False
    log(f"the demo catalog {damaged[0]} was unreadable ({damaged[1]}): rebuilding it from scratch")
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(damaged[0] + suffix).unlink(missing_ok=True)
    return True


def _damaged_sqlite(db: str) -> tuple[str, str] | None:
    """(path, why) when the demo's SQLite catalog file exists but SQLite cannot read it whole."""
    path = sqlite_file(resolve_url(db))
    if path is None or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        if f.read(16) != b"SQLite format 3\0":
            return None  # not a SQLite file at all: someone else's, never deleted (preflight says so)
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            row = conn.execute("PRAGMA quick_check").fetchone()
    except sqlite3.DatabaseError as e:
        return (path, str(e)) if "malformed" in str(e) else None  # else: locked, read-only... preflight says
    return None if row and row[0] == "ok" else (path, str(row[0] if row else "no answer"))


def _statuses(db) -> dict[str, int]:
    """How many repos of the catalog hold each status."""
    with session_factory(open_catalog(db))() as session:
        return dict(session.execute(select(Repo.status, func.count()).group_by(Repo.status)).all())


def _status_of(db, repo_id: str):
    with session_factory(open_catalog(db))() as session:
        return session.execute(select(Repo.status, Repo.reason).where(Repo.repo_id == repo_id)).first()


def urls(host: str, port: int, db_name: str) -> dict:
    """The pages the demo points at (printed once datasette answers)."""
    base = f"http://{host}:{port}"
    return {
        "home": f"{base}/",
        "drafts": f"{base}/drafts?target={quote(DEMO_TARGET)}&engine=sglang",
        "explain": f"{base}/explain?target={quote(DEMO_TARGET)}&draft={quote(DEMO_DRAFT_MISMATCH)}",
        "repos": f"{base}/{db_name}/repos",
    }
