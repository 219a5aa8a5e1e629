"""The GGUF header reader (indexer/gguf/header.py) and libllama's reading of the keys (indexer/gguf/file.py),
on files written by the gguf package's GGUFWriter."""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path

import pytest
from gguf import GGUFReader
from gguf.constants import GGUFValueType, TokenType
from ggufkit import ALL_TYPES, bpe_tokens, write_gguf

from indexer.catalog.tokenstore import TokenStore, tokens_sha256
from indexer.engines.llamacpp import speculative_compatible
from indexer.files import InputError
from indexer.gguf.file import facts_from_header, read_gguf
from indexer.gguf.header import TAIL, HeaderParser, parse_header, read_kv_section
from indexer.gguf.names import choose_file, local_gguf, split_info


def header_of(path: Path):
    data = path.read_bytes()
    return parse_header(data, len(data)), data


def test_every_value_type_reads_as_gguf_reader_reads_it(tmp_path):
    p = write_gguf(tmp_path / "m.gguf", extra=ALL_TYPES, chat_template="{{ messages }}")
    h, data = header_of(p)
    assert h.ok, h.reason
    assert h.version == 3 and h.n_tensors == 1
    ref = GGUFReader(p)
    for key, value, vtype, *_ in ALL_TYPES:
        assert h.types[key] == vtype
        field = ref.fields[key]
        expected = field.contents()
        if vtype == GGUFValueType.ARRAY:
            arr = h.arrays[key]
            assert arr.count == len(value)
            if arr.values is not None:  # short arrays keep their values
                assert arr.values == pytest.approx(expected) if arr.type != GGUFValueType.STRING else expected
        else:
            assert h.values[key] == pytest.approx(expected) if vtype in (GGUFValueType.FLOAT32,) else expected
    assert h.arrays["t.arr_u8_long"].values is None  # long arrays: type and count only
    # the section ends where the writer started the tensor infos (first tensor name follows)
    assert data[h.kv_end + 8:h.kv_end + 8 + len(b"blk.0.weight")] == b"blk.0.weight"


def test_facts_in_the_catalog_names(tmp_path):
    toks = bpe_tokens(300)
    p = write_gguf(tmp_path / "Model-Q8_0.gguf", tokens=toks, pre="llama-bpe", bos=1, eos=2, chat_template="x",
                   file_type=7)
    f = read_gguf(p)
    d = f.to_dict()
    assert d["converted"] and d["vocab_type"] == "bpe" and d["n_vocab"] == 300
    assert d["add_bos"] is True and d["add_eos"] is False  # llama-bpe turns add_bos on (llama-vocab.cpp:2174-2185)
    assert (d["bos"], d["eos"], d["pre"]) == (1, 2, "llama-bpe")
    assert d["tokens_sha256"] == tokens_sha256(toks)
    assert (d["architecture"], d["name"], d["file_type"], d["quant"]) == ("llama", "Test Model", "MOSTLY_Q8_0", "Q8_0")
    assert d["has_chat_template"] is True and d["source"] == "read"
    store = TokenStore(tmp_path / "tokens")
    assert store.put_tokens(d["tokens_sha256"], f.vocab.tokens)
    assert store.get_tokens(d["tokens_sha256"]) == toks


def test_every_truncation_is_need_more_then_malformed_never_a_traceback(tmp_path):
    p = write_gguf(tmp_path / "m.gguf", extra=ALL_TYPES, chat_template="t" * 300)
    data = p.read_bytes()
    end = parse_header(data, len(data)).kv_end
    for k in list(range(0, 64)) + list(range(64, end, 13)) + [end - 1]:
        prefix = data[:k]
        h = parse_header(prefix)  # a prefix of a longer file: ask for more
        assert h.status == "need_more", (k, h.reason)
        assert h.need > k
        cut = parse_header(prefix, len(prefix))  # the whole (truncated) file
        assert cut.status == "malformed" and cut.reason.startswith("not a valid GGUF file:"), k
        assert cut.tokens is None


def test_read_kv_section_follows_need_and_never_reads_tensor_data(tmp_path):
    p = write_gguf(tmp_path / "m.gguf", tokens=bpe_tokens(5000), merges=[f"tok{i} x" for i in range(5000)],
                   tensor_bytes=2 << 20)
    data = p.read_bytes()
    end = parse_header(data, len(data)).kv_end
    reads = []

    def read(start, stop):
        reads.append((start, stop))
        return data[start:stop]

    r = read_kv_section(read, len(data), first=16 << 10)
    assert r.header.ok and r.header.kv_end == end
    assert all(b == a for (_, a), (b, _) in zip(reads, reads[1:]))  # each read continues the last
    # the second read asks for the projected rest of the vocabulary (token types, merges) at once
    assert r.requests == 2
    assert r.bytes_read <= 1.2 * end + (16 << 10) + TAIL < len(data) // 4
    # one first range larger than the section: one request, capped at the file's size
    r1 = read_kv_section(read, len(data))
    assert r1.requests == 1 and r1.header.ok


def test_a_growing_prefix_is_parsed_once_and_gives_the_same_header(tmp_path):
    """Fed a prefix that grows a few bytes at a time (a cut inside every kind of value and inside the token
    list), one parser goes on from the last whole pair or element and ends with the header a single parse gives."""
    p = write_gguf(tmp_path / "m.gguf", extra=ALL_TYPES, tokens=bpe_tokens(3000), chat_template="t" * 300,
                   merges=[f"tok{i} x" for i in range(500)])
    data = p.read_bytes()
    whole = parse_header(data, len(data))
    parser = HeaderParser(len(data))
    buf = bytearray()
    kept = 0
    for k in range(0, whole.kv_end + 1, 7):
        buf += data[len(buf):k]
        h = parser.parse(buf)
        assert h.status == "need_more" and h.need > len(buf), k
        assert kept <= parser.pos <= len(buf)  # what is parsed stays parsed
        kept = parser.pos
    assert len(buf) - parser.pos < 400  # at most the pair (or array element) the prefix ends in is left
    buf += data[len(buf):]
    h = parser.parse(buf)
    assert h.ok and h.kv_end == whole.kv_end
    assert (h.types, h.values, h.arrays, h.tokens) == (whole.types, whole.values, whole.arrays, whole.tokens)
    assert parser.parse(buf) is h  # done: a longer prefix changes nothing


def test_many_small_keys_take_a_few_reads(tmp_path):
    """A section of 50,000 tiny keys read from a 4 KiB first range: each further read asks for at least a quarter
    more, so the section takes a logarithmic number of reads, each parsed once."""
    import numpy as np

    p = write_gguf(tmp_path / "m.gguf", extra=[(f"k{i}", np.uint8(1), GGUFValueType.UINT8) for i in range(50_000)])
    data = p.read_bytes()
    end = parse_header(data, len(data)).kv_end
    r = read_kv_section(lambda a, b: data[a:b], len(data), first=4096)
    assert r.header.ok and r.header.kv_end == end and len(r.header.values) > 50_000
    assert r.requests <= 30 and r.bytes_read <= 1.25 * end + TAIL


def test_a_key_count_past_the_cap_is_refused_at_the_head():
    """Millions of one-byte keys fit the byte cap but would each be kept: a count over DEFAULT_MAX_KV_PAIRS is
    malformed from the first read, before any pair is parsed; one under it reads whole."""
    import struct

    from indexer.gguf.header import DEFAULT_MAX_KV_PAIRS

    def many_keys(n: int) -> bytes:
        pair = struct.Struct("<Q8sIB")
        return struct.pack("<IIQQ", 0x46554747, 3, 0, n) + b"".join(pair.pack(8, b"k%07x" % i, 0, 1)
                                                                     for i in range(n))

    data = many_keys(DEFAULT_MAX_KV_PAIRS + 1)
    r = read_kv_section(lambda a, b: data[a:b], len(data), first=4096)
    assert r.header.status == "malformed" and r.requests == 1
    assert f"key/value count {DEFAULT_MAX_KV_PAIRS + 1} is over the {DEFAULT_MAX_KV_PAIRS}" in r.header.reason
    assert parse_header(data, len(data), max_pairs=None).ok  # the file itself is well formed
    data = many_keys(DEFAULT_MAX_KV_PAIRS)
    assert parse_header(data, len(data)).ok


def test_gguf_v2_reads_like_v3(tmp_path):
    p = write_gguf(tmp_path / "m.gguf", extra=ALL_TYPES)
    data = p.read_bytes()
    v2 = data[:4] + struct.pack("<I", 2) + data[8:]  # v2 and v3 share the layout (uint64 counts and lengths)
    h3, h2 = parse_header(data, len(data)), parse_header(v2, len(v2))
    assert h2.ok and h2.version == 2 and (h2.values, h2.kv_end) == (h3.values, h3.kv_end)


def test_bad_alignment_is_malformed(tmp_path):
    for value, vtype, words in ((24, GGUFValueType.UINT32, "not a power of 2"),
                                (64, GGUFValueType.UINT64, "must be of type u32")):
        p = write_gguf(tmp_path / "m.gguf", extra=[("general.alignment", value, vtype)])
        h, _ = header_of(p)
        assert h.status == "malformed" and words in h.reason


def test_alignment_padding(tmp_path):
    p = write_gguf(tmp_path / "m.gguf", alignment=256, n_tensors=3,
                   tensor_bytes=3000)
    h, data = header_of(p)
    assert h.ok and h.values["general.alignment"] == 256
    assert [t.data_offset % 256 for t in GGUFReader(p).tensors] == [0, 0, 0]
    assert h.kv_end < GGUFReader(p).tensors[0].data_offset


def _patch_u64_after(data: bytes, marker: bytes, skip: int, value: int) -> bytes:
    """Overwrite the uint64 that sits ``skip`` bytes after ``marker`` (a key name)."""
    at = data.index(marker) + len(marker) + skip
    return data[:at] + struct.pack("<Q", value) + data[at + 8:]


@pytest.mark.parametrize("count", [2**40, 2**29, 10**7])
def test_hostile_array_length_is_refused_without_allocating(tmp_path, count):
    p = write_gguf(tmp_path / "m.gguf")
    data = _patch_u64_after(p.read_bytes(), b"tokenizer.ggml.tokens", 8, count)  # after type + element type
    tracemalloc.start()
    h = parse_header(data, len(data))
    r = read_kv_section(lambda a, b: data[a:b], None)  # no file size known: the cap and the data end decide
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert h.status == "malformed" and "tokenizer.ggml.tokens" in h.reason
    assert r.header.status == "malformed"
    assert peak < 8 << 20


def test_hostile_string_length(tmp_path):
    p = write_gguf(tmp_path / "m.gguf", chat_template="hi")
    data = _patch_u64_after(p.read_bytes(), b"tokenizer.chat_template", 4, 2**31)  # after the value type
    h = parse_header(data, len(data))
    assert h.status == "malformed" and "exceeds GGUF's maximum" in h.reason
    data = _patch_u64_after(p.read_bytes(), b"tokenizer.chat_template", 4, 500 << 20)
    h = parse_header(data, len(data))
    assert h.status == "malformed" and "beyond the end of the file" in h.reason
    h = parse_header(data, None, max_bytes=64 << 20)
    assert h.status == "malformed" and "cap" in h.reason


@pytest.mark.parametrize("mutate, words", [
    (lambda d: b"GGUX" + d[4:], "bad magic"),
    (lambda d: d[:4] + struct.pack("<I", 1) + d[8:], "GGUFv1"),
    (lambda d: d[:4] + struct.pack("<I", 7) + d[8:], "unsupported GGUF version 7"),
    (lambda d: d[:4] + struct.pack(">I", 3) + d[8:], "big-endian"),
    (lambda d: d.replace(b"t.i8", b"t.u8", 1), "duplicate key 't.u8'"),
    (lambda d: d.replace(struct.pack("<Q", 4) + b"t.u8" + struct.pack("<I", 0), struct.pack("<Q", 4) + b"t.u8"
                         + struct.pack("<I", 13), 1), "invalid GGUF type 13"),
])
def test_malformed_inputs_have_one_clear_reason(tmp_path, mutate, words):
    p = write_gguf(tmp_path / "m.gguf", extra=ALL_TYPES)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(mutate(p.read_bytes()))
    with pytest.raises(InputError) as e:
        read_gguf(bad)
    assert e.value.status == "malformed" and words in e.value.message and "\n" not in e.value.message


def test_renamed_tokens_decide_llamacpp_from_id_5(tmp_path):
    base = read_gguf(write_gguf(tmp_path / "a.gguf", tokens=bpe_tokens(300))).vocab
    renamed = read_gguf(write_gguf(tmp_path / "b.gguf", tokens=bpe_tokens(300, {10: "<|tool|>"}))).vocab
    low = read_gguf(write_gguf(tmp_path / "c.gguf", tokens=bpe_tokens(300, {3: "<|pad|>"}))).vocab
    ok, reasons = speculative_compatible(base, renamed)
    assert not ok and "token 10 text differs" in reasons[0]
    assert speculative_compatible(base, low)[0]  # ids below 5 are not compared (common/speculative.cpp:31)
    longer = read_gguf(write_gguf(tmp_path / "d.gguf", tokens=bpe_tokens(428))).vocab
    assert speculative_compatible(base, longer)[0]  # 128 more tokens is within SPEC_VOCAB_MAX_SIZE_DIFFERENCE
    assert not speculative_compatible(base, read_gguf(write_gguf(tmp_path / "e.gguf", tokens=bpe_tokens(429))).vocab)[0]


def spm(tmp_path, name, **kw):
    toks = ["<unk>", "<s>", "</s>"] + [f"▁p{i}" for i in range(3, 100)]
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL] + [TokenType.NORMAL] * 97
    return read_gguf(write_gguf(tmp_path / name, model="llama", pre="default", tokens=toks, types=types,
                                scores=[0.0] * 100, **kw)).vocab


def test_llamacpp_defaults_when_keys_are_absent(tmp_path):
    v = spm(tmp_path, "s.gguf")
    assert (v.vocab_type, v.add_bos, v.add_eos, v.bos, v.eos) == ("spm", True, False, 1, 2)  # :1971-1980, :2430
    off = spm(tmp_path, "s-off.gguf", add_bos=False)
    assert off.add_bos is False
    ok, reasons = speculative_compatible(v, off)
    assert not ok and reasons[0].startswith("bos: add 1-0")
    b = read_gguf(write_gguf(tmp_path / "b.gguf", pre=None, tokens=bpe_tokens(300))).vocab
    assert (b.vocab_type, b.add_bos, b.bos, b.eos, b.pre) == ("bpe", False, 11, 11, None)  # :1993-2037, 'default'
    small = read_gguf(write_gguf(tmp_path / "small.gguf", tokens=bpe_tokens(8), merges=["a b"])).vocab
    assert small.bos == small.eos == -1  # a default id beyond the vocabulary is disabled (:2620-2625)
    glm = read_gguf(write_gguf(tmp_path / "g.gguf", pre="glm4", bos=3)).vocab
    assert glm.bos == 3  # the pre nulls the default; a written id still replaces it
    ugm = read_gguf(write_gguf(tmp_path / "u.gguf", model="t5", pre=None, scores=[0.0] * 300)).vocab
    assert (ugm.vocab_type, ugm.add_bos, ugm.add_eos, ugm.bos, ugm.eos) == ("ugm", False, True, -1, 1)
    bad_id = read_gguf(write_gguf(tmp_path / "bad-id.gguf", bos=100000)).vocab
    assert bad_id.bos == 11  # a written id beyond the vocabulary is ignored (:2629-2632)


def test_pre_is_reported_as_written_whatever_the_load_uses(tmp_path):
    """libllama reports tokenizer.ggml.pre as the GGUF holds it: Gemma4Model.set_vocab writes model 'gemma4' and
    no pre key (conversion/gemma.py:641-669), which the load tokenizes as 'gemma4' (src/llama-vocab.cpp:2149)
    with add_bos forced on (:2651-2657); SPM and UGM ignore the key (:2430-2447), BPE without one uses 'default'."""
    g = read_gguf(write_gguf(tmp_path / "g4.gguf", arch="gemma4", model="gemma4", pre=None,
                             merges=["t o1"], add_bos=False)).vocab
    assert g.converted and (g.vocab_type, g.pre, g.add_bos, g.bos, g.eos) == ("bpe", None, True, -1, -1)
    written = read_gguf(write_gguf(tmp_path / "g4-pre.gguf", arch="gemma4", model="gemma4", pre="default",
                                   merges=["t o1"])).vocab
    assert written.converted and written.pre == "default" and written.add_bos is True
    assert written.pre != g.pre and written.tokens == g.tokens  # the reported key, not the tokenization, differs
    assert spm(tmp_path, "s-pre.gguf").pre == "default"
    odd = read_gguf(write_gguf(tmp_path / "u-pre.gguf", model="t5", pre="not-a-pre", scores=[0.0] * 300)).vocab
    assert odd.converted and odd.pre == "not-a-pre"  # UGM ignores it: no 'unknown pre-tokenizer' refusal


@pytest.mark.parametrize("kw, words", [
    ({"merges": []}, "cannot find tokenizer merges"),
    ({"pre": "not-a-pre"}, "unknown pre-tokenizer type: 'not-a-pre'"),
    ({"model": "sentencepiece"}, "unknown tokenizer: 'sentencepiece'"),
    ({"model": None}, "key not found in model: tokenizer.ggml.model"),
    ({"tokens": [], "merges": ["a b"]}, "cannot find tokenizer vocab"),
    ({"types": [1] * 10}, "Index out of array bounds for toktypes (10 < 300)"),
    ({"extra": [("tokenizer.ggml.bos_token_id", 1, GGUFValueType.INT32)]}, "has wrong type int32"),
    # any special id, flag or count libllama reads must have its type too (src/llama-vocab.cpp:1947, 2457-2458,
    # 2593-2673; real files made by other tools carry them as int32 or uint8)
    ({"extra": [("tokenizer.ggml.padding_token_id", 0, GGUFValueType.INT32)]}, "padding_token_id has wrong type"),
    ({"extra": [("tokenizer.ggml.eot_token_id", 5, GGUFValueType.UINT64)]}, "eot_token_id has wrong type uint64"),
    ({"extra": [("tokenizer.ggml.add_space_prefix", 1, GGUFValueType.UINT8)]}, "add_space_prefix has wrong type"),
    ({"extra": [("tokenizer.ggml.add_sep_token", 1, GGUFValueType.INT32)]}, "add_sep_token has wrong type"),
    ({"extra": [("tokenizer.ggml.token_type_count", 2, GGUFValueType.INT32)]}, "token_type_count has wrong type"),
    ({"extra": [("tokenizer.ggml.suppress_tokens", [1, 2], GGUFValueType.ARRAY, GGUFValueType.UINT32)]},
     "invalid gguf type for tokenizer.ggml.suppress_tokens"),
    ({"tokens": bpe_tokens(300, {7: "tok9"})}, "appears twice"),
    # Kimi-K2 needs no merges, but merges it has must be strings (src/llama-vocab.cpp:2001-2011)
    ({"pre": "kimi-k2", "merges": [], "extra": [("tokenizer.ggml.merges", [1], GGUFValueType.ARRAY,
                                                  GGUFValueType.INT32)]},
     "invalid gguf type for tokenizer.ggml.merges"),
    # the architecture comes first: libllama 0.3.36 refuses one it does not know (src/llama-model.cpp:368-372),
    # e.g. a newer llama.cpp's, or a projector (src/llama.cpp:351-353)
    ({"arch": "qwen9next"}, "unknown model architecture: 'qwen9next'"),
    ({"arch": "clip"}, "CLIP cannot be used as main model"),
])
def test_what_libllama_refuses_to_load(tmp_path, kw, words):
    v = read_gguf(write_gguf(tmp_path / "m.gguf", **kw)).vocab
    assert not v.converted and words in v.error


def test_token_text_ends_at_a_nul_byte_as_libllama_reads_it(tmp_path):
    # gguf_get_arr_str returns c_str() (ggml/src/gguf.cpp:1096-1099): libllama 0.3.36 reports 'tok9' for 'tok9\0x'
    # and '[EMPTY_8]' for '\0x'; a truncated text equal to another token aborts the load
    v = read_gguf(write_gguf(tmp_path / "m.gguf", tokens=bpe_tokens(300, {9: "zz\0x", 8: "\0x"}))).vocab
    assert v.converted and (v.tokens[9], v.tokens[8]) == ("zz", "[EMPTY_8]")
    plain = read_gguf(write_gguf(tmp_path / "p.gguf", tokens=bpe_tokens(300, {9: "zz", 8: "[EMPTY_8]"}))).vocab
    assert v.tokens_sha256() == plain.tokens_sha256()
    dup = read_gguf(write_gguf(tmp_path / "d.gguf", tokens=bpe_tokens(300, {9: "tok7\0x"}))).vocab
    assert not dup.converted and "'tok7' appears twice" in dup.error


def test_a_short_byte_typed_token_fails_the_load(tmp_path):
    # building the token_to_piece cache reads a BYTE-typed text as "<0xXX>" with substr(3, 2), which throws for
    # texts under 3 bytes (src/llama-vocab.cpp:3052-3064, 3196-3201); a WPM vocabulary aborts on any (:3206-3207).
    # Checked against libllama 0.3.36 on real converter files (benchmarks/gguf_real.py).
    types = [TokenType.CONTROL] * 5 + [TokenType.NORMAL] * 295
    short = read_gguf(write_gguf(tmp_path / "s.gguf", tokens=bpe_tokens(300, {9: "a"}),
                                 types=types[:9] + [TokenType.BYTE] + types[10:])).vocab
    assert not short.converted and "basic_string::substr" in short.error
    ok = read_gguf(write_gguf(tmp_path / "ok.gguf", types=types[:9] + [TokenType.BYTE] + types[10:])).vocab
    assert ok.converted  # 'tok9' is long enough
    wpm = read_gguf(write_gguf(tmp_path / "w.gguf", model="bert", pre=None,
                               types=types[:9] + [TokenType.BYTE] + types[10:])).vocab
    assert not wpm.converted and "GGML_ABORT" in wpm.error


def test_empty_token_text_is_renamed_as_libllama_does(tmp_path):
    v = read_gguf(write_gguf(tmp_path / "m.gguf", tokens=bpe_tokens(300, {9: ""}))).vocab
    assert v.converted and v.tokens[9] == "[EMPTY_9]"


def test_split_files_shard_one_holds_the_vocabulary(tmp_path):
    write_gguf(tmp_path / "Model-Q4_K_M.gguf", split_max_tensors=1, n_tensors=2)
    shards = sorted(p.name for p in tmp_path.iterdir())
    assert shards == ["Model-Q4_K_M-00001-of-00002.gguf", "Model-Q4_K_M-00002-of-00002.gguf"]
    assert split_info(shards[1]) == ("Q4_K_M", 2, 2)
    first = read_gguf(tmp_path / shards[0])
    assert first.vocab.converted and first.split_count == 2 and first.quant == "Q4_K_M"
    assert first.notes == ["split GGUF: read shard 1 of 2"]
    second = read_gguf(tmp_path / shards[1])
    assert not second.vocab.converted and "shard 2 of 2" in second.vocab.error
    assert local_gguf(tmp_path) == tmp_path / shards[0]


def test_choose_file_takes_the_smallest_first_shard_and_skips_projectors():
    files = {"m-Q8_0.gguf": 900, "m-Q2_K-00002-of-00002.gguf": 10, "m-Q2_K-00001-of-00002.gguf": 400,
             "mmproj-m-f16.gguf": 5, "m-F16.gguf": 2000, "README.md": 1}
    assert choose_file(files) == "m-Q2_K-00001-of-00002.gguf"
    assert choose_file({"README.md": 1}) is None


def test_directory_with_two_models_must_name_one(tmp_path):
    write_gguf(tmp_path / "a-Q4_0.gguf")
    write_gguf(tmp_path / "a-Q8_0.gguf")
    with pytest.raises(InputError, match="name the file"):
        local_gguf(tmp_path)


def test_facts_from_a_header_prefix_equal_the_whole_file(tmp_path):
    p = write_gguf(tmp_path / "m.gguf", tokens=bpe_tokens(2000), tensor_bytes=1 << 20)
    data = p.read_bytes()
    whole = facts_from_header(parse_header(data, len(data)), "m.gguf").to_dict()
    end = parse_header(data, len(data)).kv_end
    part = facts_from_header(parse_header(data[:end], len(data)), "m.gguf").to_dict()
    assert whole == part
