"""The tokenizer keys convert_hf_to_gguf.py --vocab-only writes, predicted from the HF files.

Pinned converter: ggml-org/llama.cpp@0c1e57098 as vendored in the llama-cpp-python 0.3.36 sdist
(convert_hf_to_gguf.py, conversion/*.py, gguf-py/gguf/vocab.py). Line numbers below are of those files.
Nothing here runs the converter, torch or transformers' tokenizers: the paths are reproduced over the files.

This module is the converter's top: config.json (hparams), the architecture, then the architecture's
vocabulary path (``vocabpaths.py``), whose keys are a :class:`~indexer.gguf.written.Written` (``written.py``,
with gguf-py's SpecialVocab).
"""

from __future__ import annotations

from pathlib import Path

from .. import deferred
from ..errors import is_panic
from ..files import DEFAULT_MAX_FILE_BYTES, InputError
from .archs import INTERNS1_GUARDED, MAPPED_UNREGISTERED, SUPPORTED, VOCAB_PATH
from .hf import ConverterError, NotModelled, read_json
from .vocabpaths import PATHS, fail, find_hparam
from .written import Written

# ---------------------------------------------------------------- hparams (conversion/base.py:1271-1305)

def load_hparams(directory: Path, max_bytes: int) -> dict:
    """The config the converter reads (ModelBase.load_hparams), so the vocabulary path sees the same sizes."""
    path = directory / "config.json"
    if not path.is_file():
        # AutoConfig fails, no synthetic loader matches, then open() raises (base.py:1282-1291).
        raise ConverterError(f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'")
    config = dict(read_json(path, max_bytes))
    for key in ("llm_config", "lm_config", "thinker_config", "language_config", "lfm"):  # base.py:1292-1306
        if key in config:  # in this order: the last one present wins
            config["text_config"] = config[key]["text_config"] if key == "thinker_config" else config[key]
    text = config.get("text_config")
    if "vocab_size" not in config and not (isinstance(text, dict) and "vocab_size" in text):
        # AutoConfig(...).to_dict() fills the class default (base.py:1280); the installed transformers' is used.
        default = _class_default_vocab_size(directory)
        if default is not None:
            config["vocab_size"] = default
    return config


def _class_default_vocab_size(directory: Path) -> int | None:
    try:
        config = deferred.transformers.AutoConfig.from_pretrained(str(directory), trust_remote_code=False)
        return getattr(config, "vocab_size", None)
    except Exception:
        return None


def model_architecture(hparams: dict) -> str:
    """get_model_architecture for TEXT (base.py:2878-2906)."""
    text_config = hparams.get("text_config") or {}
    arch = None
    if (arches := hparams.get("architectures")) is not None and len(arches) > 0:
        arch = arches[0]
    elif "ssm_cfg" in hparams:
        arch = hparams["ssm_cfg"].get("layer", "Mamba") + "ForCausalLM"
    if arch in ("StepVLForConditionalGeneration", "Sarashina2VisionForCausalLM", "Exaone4_5_ForConditionalGeneration",
                "Step3p7ForConditionalGeneration", "KimiK3ForConditionalGeneration"):
        return arch
    if isinstance(text_config, dict) and text_config.get("architectures") is not None:
        arch = text_config["architectures"][0]
    if arch is None:
        raise ConverterError("ValueError: Failed to detect model architecture")
    return arch

def convert(directory: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> tuple[str, Written]:
    """(architecture, the keys written), or ConverterError with the converter's words."""
    hparams = load_hparams(directory, max_bytes)
    arch = model_architecture(hparams)
    if arch in MAPPED_UNREGISTERED:  # mapped, but its module registers no text model (conversion/__init__.py:399)
        raise ConverterError(f"KeyError: {arch!r}")
    if arch not in SUPPORTED:  # convert_hf_to_gguf.py:249-255
        raise ConverterError(f"Model {arch} is not supported")
    if arch not in VOCAB_PATH:
        raise NotModelled(f"indexer does not model the vocabulary path of {arch} (see conversion/__init__.py)")
    origin = (hparams.get("architectures") or [None])[0]  # origin_hf_arch: the top level, before the merge
    try:
        if "text_config" in hparams:  # TextModel.__init__, base.py:1352-1354
            hparams = {**hparams, **hparams["text_config"]}
        find_hparam(hparams, ["n_layers", "num_hidden_layers", "n_layer", "num_layers"])  # base.py:1356
        if arch in INTERNS1_GUARDED and origin == "InternS1ForConditionalGeneration":
            raise NotModelled("indexer does not model _set_vocab_interns1 (qwen.py:203-209)")
        written = PATHS[VOCAB_PATH[arch][0]](directory, hparams, max_bytes)
    except (ConverterError, InputError):
        raise
    except BaseException as e:  # the converter dies on the same exception (a tokenizers panic too): one line
        if not (isinstance(e, Exception) or is_panic(e)):
            raise
        raise fail(e) from None
    if arch == "PhiForCausalLM" and "bos" not in written.add_special:  # phi.py:36, set before set_vocab
        written.add_special["bos"] = False
    _check_encodable(written.tokens)
    return arch, written


def _check_encodable(tokens: list[str]) -> None:
    """GGUFWriter encodes every string as UTF-8 when it writes the file (gguf-py/gguf/gguf_writer.py:1627):
    a token with a lone surrogate (possible in JSON vocabularies) makes the conversion fail there."""
    try:
        "".join(tokens).encode("utf-8")
    except UnicodeEncodeError:
        for token in tokens:
            try:
                token.encode("utf-8")
            except UnicodeEncodeError as e:
                raise fail(e) from None

