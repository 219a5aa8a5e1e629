"""SQLAlchemy 2 typed models of the catalog (docs/database.md).

The catalog holds fingerprints and small facts only; full token lists live in the
content-addressed token store beside it (see ``tokenstore.py``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.sql.functions import FunctionElement

from ..engines import ENGINES as ENGINE_REGISTRY

# "gone": a complete listing of the row's scope no longer returned it (deleted, renamed, made private);
# kept for history, never suggested or published as a draft (only "ok" rows are), revived when listed again.
# "head": a speculator head (EAGLE / EAGLE-3 / DFlash / DSpark, engines/heads.py): its facts are in ``heads``; it
# needs no tokenizer and is never a draft model (a head is not a standalone model).
REPO_STATUSES = ("ok", "head", "no_tokenizer", "gated", "needs_remote_code", "too_large", "malformed", "error",
                 "gone")
ENGINES = tuple(ENGINE_REGISTRY)  # engine names, from the registry (indexer/engines/__init__.py)


class Base(DeclarativeBase):
    """The declarative base whose metadata Alembic's env.py compares the migrations against."""

    pass


class Repo(Base):
    """One Hub model repo: listing facts, config facts, and where its tokenizer lives."""

    __tablename__ = "repos"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo_id: Mapped[str] = mapped_column(String(200), unique=True)
    author: Mapped[str | None] = mapped_column(String(100), index=True)
    sha: Mapped[str | None] = mapped_column(String(40))
    last_modified: Mapped[datetime | None] = mapped_column(DateTime)
    created_at: Mapped[datetime | None] = mapped_column(DateTime)
    pipeline_tag: Mapped[str | None] = mapped_column(String(60))
    library_name: Mapped[str | None] = mapped_column(String(60))
    tags: Mapped[list | None] = mapped_column(JSON)
    gated: Mapped[str | None] = mapped_column(String(10))
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    downloads: Mapped[int | None] = mapped_column(BigInteger)
    likes: Mapped[int | None] = mapped_column(Integer)
    params: Mapped[int | None] = mapped_column(BigInteger)  # the Hub's safetensors total
    # When params is None: params.estimate_from_config via ConfigFacts (source "config"); ranking uses
    # COALESCE(params, params_estimate) and shows it as an estimate.
    params_estimate: Mapped[int | None] = mapped_column(BigInteger)
    params_active_estimate: Mapped[int | None] = mapped_column(BigInteger)
    params_estimate_source: Mapped[str | None] = mapped_column(String(20))
    base_models: Mapped[list | None] = mapped_column(JSON)  # ids from the base_model: tags, primary parent first
    base_model_relations: Mapped[dict | None] = mapped_column(JSON)  # {id: finetune|quantized|adapter|merge|None}
    family: Mapped[str | None] = mapped_column(String(60), index=True)
    is_chat: Mapped[bool | None] = mapped_column(Boolean)

    status: Mapped[str] = mapped_column(String(20), index=True)
    reason: Mapped[str | None] = mapped_column(Text)

    model_type: Mapped[str | None] = mapped_column(String(60), index=True)
    architectures: Mapped[list | None] = mapped_column(JSON)
    text_config_key: Mapped[str | None] = mapped_column(String(40))
    vocab_size: Mapped[int | None] = mapped_column(Integer)  # SGLang get_hf_text_config rule
    vocab_size_transformers: Mapped[int | None] = mapped_column(Integer)  # config.get_text_config()
    config_blob: Mapped[str | None] = mapped_column(String(64))
    # What a speculator head rule needs of a target (heads.TargetShape, from the text sub-config).
    hidden_size: Mapped[int | None] = mapped_column(Integer)
    num_hidden_layers: Mapped[int | None] = mapped_column(Integer)
    mtp_layers: Mapped[int | None] = mapped_column(Integer)  # num_nextn_predict_layers and its aliases
    mtp_key: Mapped[str | None] = mapped_column(String(60))
    text_model_type: Mapped[str | None] = mapped_column(String(60))
    file_set_id: Mapped[int | None] = mapped_column(ForeignKey("file_sets.id"), index=True)
    tokenizer_id: Mapped[int | None] = mapped_column(ForeignKey("tokenizers.id"), index=True)

    first_seen_at: Mapped[datetime | None] = mapped_column(DateTime)
    updated_at: Mapped[datetime | None] = mapped_column(DateTime)
    crawl_run_id: Mapped[int | None] = mapped_column(ForeignKey("crawl_runs.id"))


class Head(Base):
    """A speculator head repo's facts (heads.HeadFacts), one row per repo with status "head"."""

    __tablename__ = "heads"

    repo_pk: Mapped[int] = mapped_column(ForeignKey("repos.id"), primary_key=True)
    algorithm: Mapped[str] = mapped_column(String(20), index=True)
    format: Mapped[str] = mapped_column(String(20))
    layer_model_type: Mapped[str | None] = mapped_column(String(60))
    verifier: Mapped[str | None] = mapped_column(String(200))
    hidden_size: Mapped[int | None] = mapped_column(Integer)
    target_hidden_size: Mapped[int | None] = mapped_column(Integer)
    vocab_size: Mapped[int | None] = mapped_column(Integer)
    draft_vocab_size: Mapped[int | None] = mapped_column(Integer)
    aux_layer_ids: Mapped[list | None] = mapped_column(JSON)
    aux_key: Mapped[str | None] = mapped_column(String(60))
    num_target_layers: Mapped[int | None] = mapped_column(Integer)
    mask_token_id: Mapped[int | None] = mapped_column(Integer)
    speculative_tokens: Mapped[int | None] = mapped_column(Integer)
    params: Mapped[int | None] = mapped_column(BigInteger)  # own estimate from the config (no weights read)


class GGUFModelFile(Base):
    """One GGUF model file of a GGUF repo, as the crawl listed its tree (migration 0012): what ``llama-server -hf
    REPO:QUANT`` and LM Studio's download can pick. A split model is one row (its first shard's path, ``parts``
    shards); projectors and speculator heads are not model files. ``quant``: the type the name says, as llama-server
    reads a name's tag (Q4_K_M, IQ4_XS, BF16), NULL when its tag is no GGUF type."""

    __tablename__ = "gguf_files"

    repo_pk: Mapped[int] = mapped_column(ForeignKey("repos.id"), primary_key=True)
    path: Mapped[str] = mapped_column(String(255), primary_key=True)
    quant: Mapped[str | None] = mapped_column(String(30))
    parts: Mapped[int] = mapped_column(Integer, default=1)
    size: Mapped[int | None] = mapped_column(BigInteger)  # bytes over every part, when the Hub gave each size


class Tokenizer(Base):
    """One distinct vocabulary (token->id mapping as ``get_vocab()`` returns it)."""

    __tablename__ = "tokenizers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    vocab_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    base_vocab_sha256: Mapped[str] = mapped_column(String(64), index=True)
    vocab_len: Mapped[int] = mapped_column(Integer)
    max_id: Mapped[int | None] = mapped_column(Integer)
    id_holes: Mapped[int | None] = mapped_column(Integer)
    hf_vocab_size: Mapped[int | None] = mapped_column(Integer)
    added_tokens: Mapped[list | None] = mapped_column(JSON)
    bos_token: Mapped[str | None] = mapped_column(Text)
    bos_token_id: Mapped[int | None] = mapped_column(Integer)
    eos_token: Mapped[str | None] = mapped_column(Text)
    eos_token_id: Mapped[int | None] = mapped_column(Integer)
    pad_token: Mapped[str | None] = mapped_column(Text)
    pad_token_id: Mapped[int | None] = mapped_column(Integer)
    unk_token: Mapped[str | None] = mapped_column(Text)
    unk_token_id: Mapped[int | None] = mapped_column(Integer)
    add_bos_token: Mapped[bool | None] = mapped_column(Boolean)
    add_eos_token: Mapped[bool | None] = mapped_column(Boolean)
    model_type: Mapped[str | None] = mapped_column(String(20))
    tokenizer_class: Mapped[str | None] = mapped_column(String(80))
    method: Mapped[str] = mapped_column(String(10))
    transformers_version: Mapped[str | None] = mapped_column(String(20))
    repo_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime | None] = mapped_column(DateTime)
    # compute: True when every draft with the same base vocabulary agrees >= agreement.WORKS_AT with this
    # target (its text tokens, or ids, fall on added tokens under 1%); None until measured.
    agrees_by_base: Mapped[bool | None] = mapped_column(Boolean)
    agreement_basis: Mapped[str | None] = mapped_column(String(10))  # "text" (counts) or "ids" (no counts)
    # Its tokens over the reference text, and those on its added-token ids ({id: count}, usually empty): what
    # a same-base pair's text_agreement needs, so query and the site answer without the token store.
    text_tokens: Mapped[int | None] = mapped_column(Integer)
    added_text_counts: Mapped[dict | None] = mapped_column(JSON)


class TokenizerAgreement(Base):
    """How far a draft tokenizer agrees with a target tokenizer (indexer.vocab.agreement), measured by compute
    for the pairs the base-vocabulary rule does not settle: targets whose text falls on added tokens, and
    same-family tokenizers with another base vocabulary. ``grade``: works, degraded or useless."""

    __tablename__ = "tokenizer_agreement"

    target_tokenizer_id: Mapped[int] = mapped_column(ForeignKey("tokenizers.id"), primary_key=True)
    draft_tokenizer_id: Mapped[int] = mapped_column(ForeignKey("tokenizers.id"), primary_key=True)
    grade: Mapped[str] = mapped_column(String(10))
    basis: Mapped[str] = mapped_column(String(10))
    text_agreement: Mapped[float | None] = mapped_column(Float)
    ids_agreement: Mapped[float | None] = mapped_column(Float)
    differing_ids: Mapped[int | None] = mapped_column(Integer)


class FileSet(Base):
    """A tuple of tokenizer blob ids; fingerprinted once, shared by every repo that uses it."""

    __tablename__ = "file_sets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(64), unique=True)
    files: Mapped[dict] = mapped_column(JSON)  # {filename: blob_id}
    status: Mapped[str] = mapped_column(String(20))
    reason: Mapped[str | None] = mapped_column(Text)
    tokenizer_id: Mapped[int | None] = mapped_column(ForeignKey("tokenizers.id"))
    created_at: Mapped[datetime | None] = mapped_column(DateTime)


class Blob(Base):
    """A downloaded file, content-addressed by its git blob id."""

    __tablename__ = "blobs"

    blob_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    sha256: Mapped[str | None] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(BigInteger)
    first_seen_at: Mapped[datetime | None] = mapped_column(DateTime)


class CrawlRun(Base):
    """One crawl run: its scope, counts, errors and owner, so a run is audited and its claims checked."""

    __tablename__ = "crawl_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    started_at: Mapped[datetime] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    status: Mapped[str] = mapped_column(String(20))  # running, ok, partial, interrupted, failed
    scope: Mapped[str] = mapped_column(Text)
    listed: Mapped[int] = mapped_column(Integer, default=0)
    unchanged: Mapped[int] = mapped_column(Integer, default=0)
    new: Mapped[int] = mapped_column(Integer, default=0)
    changed: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    api_calls: Mapped[int] = mapped_column(Integer, default=0)
    resolver_calls: Mapped[int] = mapped_column(Integer, default=0)
    bytes_downloaded: Mapped[int] = mapped_column(BigInteger, default=0)
    errors: Mapped[list | None] = mapped_column(JSON)
    unresolved: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # listed, not yet written
    rate_limited: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # 429 answers
    owner: Mapped[str | None] = mapped_column(String(200))  # "host:pid" of the crawl (indexer/crawl/claims.py)


class CrawlQueue(Base):
    """A listed repo that a time-boxed run could not resolve: the next run starts with these.

    ``item`` is the listing's facts (``hub.Listed``), so resuming costs no listing call.
    """

    __tablename__ = "crawl_queue"

    repo_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    item: Mapped[dict] = mapped_column(JSON)
    queued_at: Mapped[datetime | None] = mapped_column(DateTime)
    crawl_run_id: Mapped[int | None] = mapped_column(ForeignKey("crawl_runs.id"))


class CompatClass(Base):
    """Repos for which one engine's verdict is *works* between any two of them (same class).

    The class key comes from the registry (``Engine.class_key``): ``vocab_size`` is the size the
    engine compares (config vocab_size for SGLang, vLLM's and transformers' text-config size,
    tokenizer.vocab_size for MLX and LM Studio, the GGUF n_vocab for llama.cpp) and
    ``tokenizer_id`` the get_vocab() mapping; llama.cpp's ``class_key`` is the GGUF signature
    (``engine_facts.gguf_signature``), and its pairs across classes are in ``llamacpp_pairs``.
    """

    __tablename__ = "compat_classes"
    __table_args__ = (
        UniqueConstraint("engine", "class_key"),
        Index("ix_compat_classes_engine_size_tok", "engine", "vocab_size", "tokenizer_id"),
        Index("ix_compat_classes_tokenizer_id", "tokenizer_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    engine: Mapped[str] = mapped_column(String(20))
    class_key: Mapped[str] = mapped_column(String(160))
    vocab_size: Mapped[int | None] = mapped_column(Integer)
    tokenizer_id: Mapped[int | None] = mapped_column(ForeignKey("tokenizers.id"))
    members: Mapped[int] = mapped_column(Integer, default=0)
    label: Mapped[str | None] = mapped_column(Text)


class RepoClass(Base):
    """Membership of a repo in one engine's compatibility class, with the ranking facts.

    The ranking facts are copied from ``repos`` so that ``indexer query`` ranks a class from
    the covering index ``ix_repo_classes_class_params`` alone, without touching ``repos``;
    ``ix_repo_classes_class_rank`` holds each class in the ranking's download order, so a query reads the head
    of a big class instead of sorting it (migration 0010); ``ix_repo_classes_lineage`` finds a repo's copies, the
    members of its class that share its lineage (migration 0013).
    """

    __tablename__ = "repo_classes"
    __table_args__ = (
        Index("ix_repo_classes_class_params", "class_id", "params", "downloads", "lineage_id", "author_id",
              "family_id", "is_chat", "gated", "disabled", "repo_pk"),
        Index("ix_repo_classes_class_rank", "class_id", "gated", text("COALESCE(downloads, 0) DESC"), "repo_pk"),
        Index("ix_repo_classes_lineage", "lineage_id", "class_id"),
    )

    engine: Mapped[str] = mapped_column(String(20), primary_key=True)
    repo_pk: Mapped[int] = mapped_column(ForeignKey("repos.id"), primary_key=True)
    class_id: Mapped[int] = mapped_column(ForeignKey("compat_classes.id"))
    params: Mapped[int | None] = mapped_column(BigInteger)
    downloads: Mapped[int | None] = mapped_column(BigInteger)
    # Root of the repo's base_models chain (same value => same lineage), numbered by compute.
    lineage_id: Mapped[int | None] = mapped_column(Integer)
    author_id: Mapped[int | None] = mapped_column(Integer)  # dense number of repos.author, per compute
    family_id: Mapped[int | None] = mapped_column(Integer)  # dense number of repos.family, per compute
    is_chat: Mapped[bool | None] = mapped_column(Boolean)
    gated: Mapped[bool] = mapped_column(Boolean, default=False)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)


class PairVerdict(Base):
    """Cached verdicts that need token lists (llama.cpp, TLI), for candidate pairs only."""

    __tablename__ = "pair_verdicts"

    target_tokenizer_id: Mapped[int] = mapped_column(ForeignKey("tokenizers.id"), primary_key=True)
    draft_tokenizer_id: Mapped[int] = mapped_column(ForeignKey("tokenizers.id"), primary_key=True)
    llamacpp_ok: Mapped[bool | None] = mapped_column(Boolean)
    llamacpp_reason: Mapped[str | None] = mapped_column(Text)
    tli_intersection: Mapped[int | None] = mapped_column(Integer)
    tli_ratio: Mapped[float | None] = mapped_column(Float)


class EngineFacts(Base):
    """What the engines read beyond ``repos`` and ``tokenizers``, derived by ``compute`` once per
    distinct (tokenizer file set, config blob): vLLM's text config, LM Studio's vision_config and
    the GGUF vocabulary ``convert_hf_to_gguf.py`` would write (token list in the token store)."""

    __tablename__ = "engine_facts"
    __table_args__ = (UniqueConstraint("file_set_id", "config_blob"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    file_set_id: Mapped[int] = mapped_column(ForeignKey("file_sets.id"))
    config_blob: Mapped[str] = mapped_column(String(64))  # '' when the repo has no config blob
    vllm_vocab_size: Mapped[int | None] = mapped_column(Integer)
    text_config_error: Mapped[str | None] = mapped_column(Text)  # get_text_config() raises
    has_vision_config: Mapped[bool] = mapped_column(Boolean, default=False)
    gguf_converted: Mapped[bool] = mapped_column(Boolean, default=False)
    gguf_error: Mapped[str | None] = mapped_column(Text)  # why the converter refuses
    gguf_n_vocab: Mapped[int | None] = mapped_column(Integer)
    gguf_tokens_sha256: Mapped[str | None] = mapped_column(String(64))
    gguf: Mapped[dict | None] = mapped_column(JSON)  # GGUFVocab.to_dict()
    # llama.cpp's class key: equal signatures pass common_speculative_are_compatible
    gguf_signature: Mapped[str | None] = mapped_column(String(64), index=True)
    # token-prefix buckets: a passing pair of different signatures shares one (see compute.py)
    gguf_bucket_hi: Mapped[str | None] = mapped_column(String(64), index=True)
    gguf_bucket_lo: Mapped[str | None] = mapped_column(String(64), index=True)
    llamacpp_commit: Mapped[str | None] = mapped_column(String(20))
    derived_at: Mapped[datetime | None] = mapped_column(DateTime)
    # ArchFacts.to_dict() (indexer/vocab/archconfig.py): what the engines check beside the vocabulary; NULL until
    # compute derives it from the config blob (a GGUF repo's comes from its header, written by the crawl)
    arch: Mapped[dict | None] = mapped_column(JSON)


class LlamacppPair(Base):
    """common_speculative_are_compatible for GGUF signatures that differ but may pass (candidates only)."""

    __tablename__ = "llamacpp_pairs"

    target_signature: Mapped[str] = mapped_column(String(64), primary_key=True)
    draft_signature: Mapped[str] = mapped_column(String(64), primary_key=True)
    compatible: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str | None] = mapped_column(Text)
    failed_checks: Mapped[int] = mapped_column(Integer, default=0)


class Meta(Base):
    """Key/value facts about the catalog (transformers version, last compute, ...)."""

    __tablename__ = "meta"

    key: Mapped[str] = mapped_column(String(60), primary_key=True)
    value: Mapped[str | None] = mapped_column(Text)


class repo_name_part(FunctionElement):
    """The name after ``org/`` of a repo id, in SQL (for the bare-name lookup index)."""

    type = String()
    inherit_cache = True


@compiles(repo_name_part)
def _repo_name_part_sqlite(element, compiler, **kw):
    arg = compiler.process(list(element.clauses)[0], **kw)
    return f"substr({arg}, instr({arg}, '/') + 1)"


@compiles(repo_name_part, "postgresql")
def _repo_name_part_pg(element, compiler, **kw):
    arg = compiler.process(list(element.clauses)[0], **kw)
    return f"substr({arg}, strpos({arg}, '/') + 1)"


class BlobWait(Base):
    """A gated repo whose files are known by blob id (paths-info) but not all held: settled with zero
    requests once identical public copies bring the missing blobs, in the same run or a later one.

    ``entries`` is ``{filename: [blob_id, size, lfs_sha256]}`` at commit ``sha``; ``item`` the listing's facts.
    """

    __tablename__ = "blob_waits"

    repo_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    sha: Mapped[str] = mapped_column(String(64))
    item: Mapped[dict] = mapped_column(JSON)
    entries: Mapped[dict] = mapped_column(JSON)
    since: Mapped[datetime | None] = mapped_column(DateTime)


class ScopeCursor(Base):
    """Where a scope's listing (sorted by lastModified, newest first) stands between runs.

    ``high_water``: newest lastModified of the last completed pass (the next pass stops below it, less a
    margin); ``resumes``: ``[{"url": next-page URL, "floor": ISO time}]`` of passes that failed part-way;
    ``full_at``: end of the last complete full listing (only that can mark rows ``gone``).
    """

    __tablename__ = "scope_cursors"

    scope: Mapped[str] = mapped_column(String(300), primary_key=True)
    high_water: Mapped[datetime | None] = mapped_column(DateTime)
    resumes: Mapped[list | None] = mapped_column(JSON)
    full_at: Mapped[datetime | None] = mapped_column(DateTime)
    updated_at: Mapped[datetime | None] = mapped_column(DateTime)


class Measurement(Base):
    """What ``indexer measure`` read from a running engine for one pair (migration 0011): the engine's release as
    its server reported it, the device, quantizations, task and draft length, the acceptance and the decode speeds
    with and without the draft, and the estimate at the time. ``calibration`` false: the device or the release was
    not identified, so the row is kept and shown but never used to calibrate."""

    __tablename__ = "measurements"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    target: Mapped[str] = mapped_column(String(200))
    draft: Mapped[str] = mapped_column(String(200))
    engine: Mapped[str] = mapped_column(String(20))
    engine_version: Mapped[str | None] = mapped_column(String(120))
    hardware: Mapped[str | None] = mapped_column(String(60))
    target_quant: Mapped[str | None] = mapped_column(String(30))
    draft_quant: Mapped[str | None] = mapped_column(String(30))
    task: Mapped[str] = mapped_column(String(20))
    draft_tokens: Mapped[int | None] = mapped_column(Integer)
    acceptance: Mapped[float | None] = mapped_column(Float)  # accepted / drafted, as the engine counts them
    drafted: Mapped[int | None] = mapped_column(BigInteger)
    accepted: Mapped[int | None] = mapped_column(BigInteger)
    rounds: Mapped[int | None] = mapped_column(BigInteger)
    tokens: Mapped[int | None] = mapped_column(BigInteger)
    tok_s: Mapped[float | None] = mapped_column(Float)
    tok_s_baseline: Mapped[float | None] = mapped_column(Float)
    speedup: Mapped[float | None] = mapped_column(Float)
    estimate: Mapped[float | None] = mapped_column(Float)
    runs: Mapped[int] = mapped_column(Integer)
    prompts: Mapped[int | None] = mapped_column(Integer)
    max_tokens: Mapped[int | None] = mapped_column(Integer)
    same_text: Mapped[bool | None] = mapped_column(Boolean)
    calibration: Mapped[bool] = mapped_column(Boolean)
    measured_at: Mapped[datetime] = mapped_column(DateTime)
    tool_version: Mapped[str] = mapped_column(String(30))


Index("ix_measurements_pair", Measurement.target, Measurement.draft, Measurement.engine)


# Case-insensitive repo id lookup and "did you mean" (indexer/answer/lookup.py) read these two expression indexes.
Index("ix_repos_repo_id_lower", func.lower(Repo.repo_id))
Index("ix_repos_name_lower", func.lower(repo_name_part(Repo.repo_id)))
