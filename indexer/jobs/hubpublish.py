"""``indexer publish --to-hub ORG/NAME``: the catalog as a Hub dataset, in one commit.

The commit holds, under fixed names (docs/hub-upload.md §2.6: a dated name would add a ``.gitattributes`` line a night):

* ``catalog.sqlite``: the compacted read-only snapshot (``publish.compact_into``: ``VACUUM INTO``, stripped of any
  repo id it does not hold, checked);
* ``tokens.tar``: the token store beside the catalog (``catalog/tokenstore.py``: full vocabularies, GGUF token
  lists, id counts) of the public repos: a gated repo's lists only when a public repo has the same
  (``catalog/published.py``). ``check`` reads them (vocabulary agreement, llama.cpp's token-text check, TLI), so
  a pulled catalog answers as the crawler's only with them. Deterministic (sorted, no times), so an unchanged
  store hashes the same;
* ``manifest.json``: indexer version, schema revision, ``created_at``, table counts, each file's sha256 and size,
  ``data_as_of`` and the per-scope high-water marks (``catalog/snapshot.py``);
* ``data/{drafts,repos,tokenizers,classes,measurements,gguf_files}.parquet`` for the dataset viewer (``drafts``: the
  ranked drafts ``indexer query`` gives the most downloaded targets on each engine; ``gguf_files``: each GGUF repo's
  model files, the tags ``-hf REPO:TAG`` loads), and ``README.md``, the dataset card.

Failures: nothing changed (the snapshot and token store hash as published): no commit. The remote moved (412):
read it again and retry once. The remote holds newer data: refused, never replaced. 429 on the commit: waited
out (``hub/dataset.py``). No token, a read-only token, a missing or mistyped repo: one line, exit 2, nothing
uploaded (the preupload refuses before any byte is sent). The token comes from ``HF_TOKEN`` (huggingface_hub's
``get_token``) and is passed to the client only: never written into the catalog, the manifest or a log.
"""

from __future__ import annotations

import io
import json
import sqlite3
import tarfile
import time
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from huggingface_hub import get_token

from .. import __version__
from ..answer.query import open_reader, run_query
from ..catalog.db import resolve_url, sqlite_path
from ..catalog.published import token_sha
from ..catalog.snapshot import freshness, older_than, schema_revision
from ..catalog.tokenstore import default_root
from ..engines import ENGINES
from ..errors import DatasetError, IndexerError
from ..files import sha256_file
from ..hub.dataset import DatasetRepo, StaleParent
from ..scratch import scratch_dir
from .publish import catalog_file, compact_into, export_sqlite

SNAPSHOT = "catalog.sqlite"
TOKENS = "tokens.tar"
MANIFEST = "manifest.json"
CARD = "README.md"
MANIFEST_FORMAT = 1
# (file, SQL, columns with Arrow types): the tables a person browses. ``classes`` lists each engine's classes:
# the drafts of a target on an engine are the rows sharing its class (``indexer query`` ranks them).
PARQUET = {
    "repos": ("data/repos.parquet",
              "SELECT r.repo_id, r.author, r.family, r.status, r.reason, r.pipeline_tag, r.library_name, r.model_type,"
              " r.architectures, r.vocab_size, r.vocab_size_transformers, COALESCE(r.params, r.params_estimate),"
              " r.downloads, r.likes, r.gated, r.is_chat, r.base_models, t.vocab_sha256, r.sha, r.last_modified"
              " FROM repos r LEFT JOIN tokenizers t ON t.id = r.tokenizer_id ORDER BY r.repo_id",
              [("repo_id", "string"), ("author", "string"), ("family", "string"), ("status", "string"),
               ("reason", "string"), ("pipeline_tag", "string"), ("library_name", "string"),
               ("model_type", "string"), ("architectures", "string"), ("vocab_size", "int64"),
               ("vocab_size_transformers", "int64"), ("params", "int64"), ("downloads", "int64"),
               ("likes", "int64"), ("gated", "string"), ("is_chat", "bool"), ("base_models", "string"),
               ("vocab_sha256", "string"), ("sha", "string"), ("last_modified", "string")]),
    "tokenizers": ("data/tokenizers.parquet",
                   "SELECT vocab_sha256, base_vocab_sha256, vocab_len, hf_vocab_size, tokenizer_class, model_type,"
                   " bos_token, eos_token, pad_token, unk_token, method, repo_count FROM tokenizers"
                   " ORDER BY vocab_sha256",
                   [("vocab_sha256", "string"), ("base_vocab_sha256", "string"), ("vocab_len", "int64"),
                    ("hf_vocab_size", "int64"), ("tokenizer_class", "string"), ("model_type", "string"),
                    ("bos_token", "string"), ("eos_token", "string"), ("pad_token", "string"),
                    ("unk_token", "string"), ("method", "string"), ("repo_count", "int64")]),
    "classes": ("data/classes.parquet",
                "SELECT rc.engine, rc.class_id, r.repo_id, rc.params, rc.downloads, rc.is_chat, rc.gated"
                " FROM repo_classes rc JOIN repos r ON r.id = rc.repo_pk ORDER BY rc.engine, rc.class_id, r.repo_id",
                [("engine", "string"), ("class_id", "int64"), ("repo_id", "string"), ("params", "int64"),
                 ("downloads", "int64"), ("is_chat", "bool"), ("gated", "bool")]),
    "measurements": ("data/measurements.parquet",
                     "SELECT target, draft, engine, engine_version, hardware, target_quant, draft_quant, task,"
                     " draft_tokens, acceptance, drafted, accepted, rounds, tokens, tok_s, tok_s_baseline, speedup,"
                     " estimate, runs, calibration, measured_at, tool_version FROM measurements"
                     " ORDER BY measured_at, id",
                     [("target", "string"), ("draft", "string"), ("engine", "string"), ("engine_version", "string"),
                      ("hardware", "string"), ("target_quant", "string"), ("draft_quant", "string"),
                      ("task", "string"), ("draft_tokens", "int64"), ("acceptance", "float64"),
                      ("drafted", "int64"), ("accepted", "int64"), ("rounds", "int64"), ("tokens", "int64"),
                      ("tok_s", "float64"), ("tok_s_baseline", "float64"), ("speedup", "float64"),
                      ("estimate", "float64"), ("runs", "int64"), ("calibration", "bool"),
                      ("measured_at", "string"), ("tool_version", "string")]),
    "gguf_files": ("data/gguf_files.parquet",
                   "SELECT r.repo_id, g.path, g.quant, g.parts, g.size FROM gguf_files g"
                   " JOIN repos r ON r.id = g.repo_pk ORDER BY r.repo_id, g.path",
                   [("repo_id", "string"), ("path", "string"), ("quant", "string"), ("parts", "int64"),
                    ("size", "int64")]),
}
# Tables a catalog from before their migration lacks: an empty file of the same columns.
SINCE = {"measurements": "0011", "gguf_files": "0012"}
# ``drafts``: what ``indexer query --target T --engine E`` answers, for the most downloaded targets (one answer API:
# no second copy of the ranking in SQL).
DRAFTS = ("data/drafts.parquet", [("engine", "string"), ("target", "string"), ("rank", "int64"),
                                  ("draft", "string"), ("outcome", "string"), ("params", "int64"),
                                  ("ratio", "float64"), ("downloads", "int64"), ("reasons", "string"),
                                  ("launch", "string")])
DRAFT_TARGETS = 1000  # targets answered, most downloaded first
DRAFTS_PER_TARGET = 5
BATCH = 50_000


def export_parquet(snapshot: Path, out_dir: Path, answers_db: str | None = None) -> dict[str, int]:
    """Write the browsable tables as Parquet under ``out_dir``; returns rows per config. The ``drafts`` are
    answered on ``answers_db`` (the catalog ``--db`` names, with its token store; None here: the snapshot)."""
    rows_out = {}
    con = sqlite3.connect(f"file:{snapshot}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for name, (rel, sql, cols) in PARQUET.items():
            schema = _schema(cols)
            dest = out_dir / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            n = 0
            with pq.ParquetWriter(dest, schema) as writer:
                if name not in tables and name in SINCE:  # a catalog from before the table's migration
                    writer.write_table(schema.empty_table())
                    rows_out[name] = 0
                    continue
                cur = con.execute(sql)
                while batch := cur.fetchmany(BATCH):
                    columns = list(zip(*batch, strict=True))
                    arrays = [pa.array([_cell(v, t) for v in col], type=schema.field(c).type)
                              for col, (c, t) in zip(columns, cols, strict=True)]
                    writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
                    n += len(batch)
            rows_out[name] = n
    finally:
        con.close()
    rows_out["drafts"] = export_drafts(answers_db if answers_db is not None else str(snapshot), out_dir / DRAFTS[0])
    return rows_out


def _schema(cols):
    types = {"string": pa.string(), "int64": pa.int64(), "bool": pa.bool_(), "float64": pa.float64()}
    return pa.schema([(c, types[t]) for c, t in cols])


def export_drafts(db: str, dest: Path, targets: int = DRAFT_TARGETS) -> int:
    """The ranked drafts ``indexer query`` gives each of the ``targets`` most downloaded ok repos, per engine."""
    rows = []
    reader = open_reader(db)
    try:
        ids = [r[0] for r in reader.all("SELECT repo_id FROM repos WHERE status = 'ok' "
                                        "ORDER BY downloads DESC, repo_id LIMIT :n", {"n": targets})]
        for target in ids:
            for engine in ENGINES:
                try:
                    answer = run_query(target, engine=engine, limit=DRAFTS_PER_TARGET, reader=reader)
                except IndexerError:  # not answerable on this engine (a head, no class): no rows
                    continue
                for rank, d in enumerate(answer["drafts"], 1):
                    rows.append({"engine": engine, "target": target, "rank": rank, "draft": d["repo_id"],
                                 "outcome": d.get("outcome"), "params": d.get("params"), "ratio": d.get("ratio"),
                                 "downloads": d.get("downloads"), "reasons": "; ".join(d.get("reasons") or []),
                                 "launch": d.get("launch")})
    finally:
        reader.close()
    dest.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=_schema(DRAFTS[1])), dest)
    return len(rows)


def _cell(value, arrow_type: str):
    if value is None:
        return None
    if arrow_type == "bool":
        return bool(value)
    if arrow_type == "string":
        return str(value)
    return value


def token_archive(root: Path, dest: Path, public: set[str] | None = None) -> dict | None:
    """The token store as one tar (sorted, times and owners zeroed: equal stores give equal bytes), or None
    when there is none. Only store files (``xx/<sha256>.{json,tokens,counts}.z``) go in, and with ``public`` only
    those named by it (catalog/published.py: a gated repo's token lists stay out)."""
    if not root.is_dir():
        return None
    names = sorted(p.relative_to(root).as_posix() for p in root.glob("*/*.z")
                   if p.is_file() and (public is None or token_sha(p.name) in public))
    if not names:
        return None
    with tarfile.open(dest, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            data = (root / name).read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return {"path": TOKENS, "bytes": dest.stat().st_size, "sha256": sha256_file(dest), "files": len(names)}


def card(repo_id: str, manifest: dict) -> str:
    """The dataset card: YAML metadata (license, tags, ``configs`` naming the Parquet files) and how to pull."""
    meta = {
        "license": "apache-2.0",
        "pretty_name": "indexer catalog: which draft models can speculate for which targets",
        "tags": ["speculative-decoding", "draft-models", "tokenizers", "vocabulary", "sqlite", "catalog"],
        "configs": [{"config_name": name, "data_files": rel, **({"default": True} if name == "drafts" else {})}
                    for name, rel in [("drafts", DRAFTS[0])] + [(n, v[0]) for n, v in PARQUET.items()]],
    }
    counts = manifest["counts"]
    return (f"---\n{yaml.safe_dump(meta, sort_keys=False)}---\n\n# {repo_id}\n\n"
            f"The indexer catalog: {counts.get('repos', 0)} model repos, "
            f"{counts.get('tokenizers', 0)} tokenizers, and per serving engine which repos can draft for which "
            f"targets. Data as of {manifest['data_as_of'] or 'unknown'}; schema revision "
            f"{manifest['schema_revision']}; indexer {manifest['indexer_version']}.\n\n"
            f"Use it with `indexer pull --from {repo_id}` (or `INDEXER_CATALOG_REPO={repo_id} indexer pull`), then "
            "`indexer query --target ORG/MODEL`. `catalog.sqlite` is the SQLite catalog (sha256 in "
            "`manifest.json`), `tokens.tar` the token store `check` reads, `data/*.parquet` the tables shown "
            "above: `drafts` is what `indexer query` answers for the most downloaded targets on each engine, "
            "`classes` each engine's compatibility classes (a target's drafts share its class), `measurements` what "
            "`indexer measure` read from running engines: acceptance and decode speed with and without the draft, "
            "per pair, engine release, device and task, beside the estimate at the time (rows with `calibration` "
            "false name no device or release and are never used to calibrate), `gguf_files` every model file of "
            "each GGUF repo: its path, the quantization type its name says (the tag `llama-server -hf REPO:TAG` "
            "loads), how many shards a split file has and its size in bytes over them.\n")


def build(db: str | None, out: Path) -> dict:
    """Write every file of the commit into ``out``; returns the manifest (also written as manifest.json)."""
    if sqlite_path(resolve_url(db)) is None:
        src = out / ".export.sqlite"
        export_sqlite(db, src)
    else:
        src = catalog_file(db)
    snap = compact_into(src, out / SNAPSHOT)
    if src.parent == out:
        src.unlink()
    tokens = token_archive(default_root(db), out / TOKENS, snap["public_tokens"])
    rows = export_parquet(out / SNAPSHOT, out, db)
    manifest = {
        "format": MANIFEST_FORMAT,
        "indexer_version": __version__,
        "schema_revision": schema_revision(out / SNAPSHOT),
        "created_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **freshness(out / SNAPSHOT),
        "counts": snap["tables"],
        "snapshot": {"path": SNAPSHOT, "bytes": snap["bytes"], "sha256": snap["sha256"]},
        "tokens": tokens,
        "parquet": {name: {"path": DRAFTS[0] if name == "drafts" else PARQUET[name][0], "rows": n}
                    for name, n in rows.items()},
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    return manifest


def same_content(ours: dict, theirs: dict | None) -> bool:
    """Whether the published manifest already has this snapshot and token store (then nothing is committed)."""
    if not theirs:
        return False
    key = lambda m: ((m.get("snapshot") or {}).get("sha256"), (m.get("tokens") or {}).get("sha256"))  # noqa: E731
    return key(ours) == key(theirs)


def files_of(out: Path, manifest: dict) -> dict[str, Path]:
    """Path in the repo -> local file, for the commit."""
    files = {SNAPSHOT: out / SNAPSHOT, MANIFEST: out / MANIFEST, CARD: out / CARD}
    if manifest.get("tokens"):
        files[TOKENS] = out / TOKENS
    files.update({p["path"]: out / p["path"] for p in manifest["parquet"].values()})
    return files


def publish_to_hub(db: str | None, repo_id: str, *, endpoint: str | None = None, token: str | None = None,
                   sleep=None, log=lambda _m: None, progress: bool = False) -> dict:
    """Build the snapshot and commit it to the dataset ``repo_id``; returns what was done (``status``
    ``published`` or ``unchanged``, the commit, the manifest). ``progress``: one upload bar (a terminal's)."""
    token = token or get_token()
    hub = DatasetRepo(repo_id, endpoint=endpoint, token=token)  # a mistyped id or offline: refused here
    if not token:
        raise DatasetError(f"no token: set HF_TOKEN to a token that can write to {repo_id}")
    with scratch_dir(prefix="indexer-hub-publish-") as tmp:
        out = Path(tmp)
        try:
            manifest = build(db, out)
            (out / CARD).write_text(card(repo_id, manifest), "utf-8")
        except (OSError, sqlite3.OperationalError) as e:  # a full disk while compacting or exporting
            raise DatasetError(f"cannot build the snapshot in {tmp}: {getattr(e, 'strerror', None) or e}",
                               exit_code=1) from None
        log(f"snapshot {manifest['snapshot']['bytes']} bytes, {manifest['counts'].get('repos', 0)} repos")
        hub.ensure()
        for attempt in (1, 2):
            info = hub.info()
            scratch = out / f".remote-{attempt}"
            theirs = hub.read_json(MANIFEST, info.sha, scratch) if _has(info, MANIFEST) else None
            result = {"repo": repo_id, "endpoint": hub.endpoint, "manifest": manifest, "parent": info.sha}
            if same_content(manifest, theirs):
                return {**result, "status": "unchanged", "commit": info.sha}
            if theirs and older_than(manifest, theirs):
                raise DatasetError(f"{repo_id} holds newer data (as of {theirs.get('data_as_of')}) than this "
                                   f"catalog ({manifest.get('data_as_of')}); not replaced")
            message = f"catalog: {manifest['counts'].get('repos', 0)} repos, data as of {manifest['data_as_of']}"
            try:
                oid = hub.commit(files_of(out, manifest), info.sha, message, sleep=sleep or time.sleep,
                                 progress=progress)
            except StaleParent:
                if attempt == 2:
                    raise DatasetError(f"{repo_id} kept moving while publishing (412 twice); try again") from None
                log(f"{repo_id} moved since it was read (412): reading it again")
                continue
            return {**result, "status": "published", "commit": oid}
    raise AssertionError("unreachable")


def _has(info, path: str) -> bool:
    return any(s.rfilename == path for s in (info.siblings or []))

