"""Parse a GGUF file's key/value section from a byte prefix, and stop there (never tensor data).

GGUF (ggml/src/gguf.cpp at llama.cpp@0c1e57098, ``gguf_init_from_file_impl``): little-endian; magic ``GGUF``;
uint32 version (2 or 3: v1 is refused, :509-513, and newer than 3 is refused, :515-518); uint64 tensor count;
uint64 key/value count; then per pair a string key, a uint32 value type and the value. A string is a uint64
length and that many bytes; an array is a uint32 element type, a uint64 count and the elements (no arrays of
arrays, :604-611). Keys are non-empty and unique (:571-579). Lengths are checked as the library does
(``GGUF_MAX_STRING_LENGTH`` / ``GGUF_MAX_ARRAY_ELEMENTS`` = 2^30, :20-21; a string or array longer than the rest
of the file fails, :280-299, :348-355).

:class:`HeaderParser` works on any prefix, and on a longer one goes on from where it stopped: time is linear in
the section however many extensions it takes (:func:`parse_header` parses one prefix). When the prefix ends
inside the section it answers ``need_more`` with ``need``, the prefix length to read next (exact when a length
field says so, else projected from the array being read), so a caller extends its HTTP range instead of
guessing. Memory stays bounded by the bytes actually held: nothing is allocated from a length field before the
bytes are there, and a length beyond the file (or the cap) is ``malformed`` at once. :func:`read_kv_section`
drives any ``read(start, end)`` callable (a local file, an HTTP Range request) with as few reads as the section
needs.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from gguf.constants import GGUF_MAGIC, GGUFValueType, Keys

MAX_STRING_LENGTH = 1 << 30  # GGUF_MAX_STRING_LENGTH, ggml/src/gguf.cpp:20
MAX_ARRAY_ELEMENTS = 1 << 30  # GGUF_MAX_ARRAY_ELEMENTS, ggml/src/gguf.cpp:21
DEFAULT_MAX_KV_BYTES = 256 << 20  # our cap on a key/value section (real ones are 1-20 MiB)
# Our cap on the key/value count (real files have 20-60 keys; the vocabulary is a few arrays): each key is kept,
# so 12 M one-byte keys within the byte cap would cost about 2 GB of memory and minutes of parsing.
DEFAULT_MAX_KV_PAIRS = 1 << 16
FIRST_READ = 8 << 20  # one range covers the section of typical vocabularies (<= ~200k tokens with merges)
TAIL = 32 << 10  # an extension also covers this much after the projected vocabulary (ids, chat template)
KEEP_STRING = 1 << 20  # strings longer than this are kept as their length only (no fact needs them)
KEEP_ARRAY = 64  # arrays other than the token list keep their values up to this many elements

_SCALAR: dict[int, str] = {  # value type -> struct format (ggml/src/gguf.cpp:586-600; BOOL is an int8 != 0, :316-323)
    GGUFValueType.UINT8: "<B", GGUFValueType.INT8: "<b", GGUFValueType.UINT16: "<H", GGUFValueType.INT16: "<h",
    GGUFValueType.UINT32: "<I", GGUFValueType.INT32: "<i", GGUFValueType.FLOAT32: "<f", GGUFValueType.BOOL: "<b",
    GGUFValueType.UINT64: "<Q", GGUFValueType.INT64: "<q", GGUFValueType.FLOAT64: "<d",
}
_SIZE = {t: struct.calcsize(f) for t, f in _SCALAR.items()}
# plain ints for the per-pair comparisons (an enum member's attribute lookup costs more than the comparison)
_ARRAY, _STRING, _BOOL = int(GGUFValueType.ARRAY), int(GGUFValueType.STRING), int(GGUFValueType.BOOL)
_U32 = struct.Struct("<I").unpack_from
TYPE_NAMES = {int(t): t.name.lower() for t in GGUFValueType}


@dataclass
class Array:
    """An array value: element type, count, and the elements when kept (token list, short arrays)."""

    type: int
    count: int
    values: list | None = None


@dataclass
class Header:
    """The key/value section parsed from a prefix of the file, or what more to read, or why it is malformed."""

    status: str  # "ok", "need_more" or "malformed"
    reason: str | None = None
    need: int | None = None  # need_more: read the prefix up to this many bytes
    version: int | None = None
    n_tensors: int | None = None
    n_kv: int | None = None
    kv_end: int | None = None  # ok: the offset where the key/value section ends
    types: dict[str, int] = field(default_factory=dict)  # key -> GGUFValueType (ARRAY for arrays)
    values: dict[str, object] = field(default_factory=dict)  # scalars and strings (a long string: its length)
    arrays: dict[str, Array] = field(default_factory=dict)
    tokens: list[str] | None = None  # tokenizer.ggml.tokens as text (UTF-8; invalid bytes surrogate-escaped)

    @property
    def ok(self) -> bool:
        """Whether the whole key/value section was parsed."""
        return self.status == "ok"


class _Short(Exception):
    def __init__(self, need: int):
        self.need = need


class _Bad(Exception):
    pass


def token_text(raw: bytes) -> str:
    """A token's bytes as text that encodes back to the same bytes with ``surrogatepass`` (tokens_sha256)."""
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "surrogateescape")


class _Cursor:
    def __init__(self, data, file_size: int | None, cap: int):
        self.buf = memoryview(data)
        self.end = len(self.buf)
        self.pos = 0
        # the bytes that can exist: the file's size when known (the library's nbytes_remain), else the cap
        self.limit = min(file_size, cap) if file_size is not None else cap
        self.file_size, self.cap = file_size, cap
        self.key: str | None = None  # the key being read
        self.count = 0  # and its array length (projections)

    def _room(self, n: int, what: str, project: int | None = None) -> None:
        """Bytes [pos, pos+n) must exist: past the file or the cap is malformed, past the prefix is short."""
        stop = self.pos + n
        if stop > self.limit:
            if self.file_size is not None and stop > self.file_size:
                raise _Bad(f"{what} at offset {self.pos} needs {n} bytes, beyond the end of the file "
                           f"({self.file_size} bytes)")
            raise _Bad(f"the key/value section is longer than the {self.cap}-byte cap ({what} at offset {self.pos})")
        if stop > self.end:
            raise _Short(max(stop, project or 0))

    def scalar(self, typ: int, what: str):
        size = _SIZE[typ]
        self._room(size, what)
        (v,) = struct.unpack_from(_SCALAR[typ], self.buf, self.pos)
        self.pos += size
        return v != 0 if typ == _BOOL else v

    def u32(self, what: str) -> int:
        self._room(4, what)
        (v,) = _U32(self.buf, self.pos)
        self.pos += 4
        return v

    def u64(self, what: str) -> int:
        self._room(8, what)
        (v,) = _U64(self.buf, self.pos)
        self.pos += 8
        return v

    def string(self, what: str, keep: bool = True, project: int | None = None):
        self._room(8, f"{what} length", project)
        n = self.u64(f"{what} length")
        if n > MAX_STRING_LENGTH:
            raise _Bad(f"{what} at offset {self.pos - 8}: length {n} exceeds GGUF's maximum {MAX_STRING_LENGTH}")
        self._room(n, what, project)
        start = self.pos
        self.pos += n
        return bytes(self.buf[start:self.pos]) if keep else n


_U64 = struct.Struct("<Q").unpack_from


@dataclass
class _Partial:
    """An array whose elements are still arriving: what is parsed of it so far."""

    key: str
    out: Array
    keep: bool
    start: int  # offset of its first element
    i: int = 0  # elements parsed


class HeaderParser:
    """The key/value section of one file, parsed as its prefix grows: each :meth:`parse` goes on from the last
    whole pair (or array element) the previous call reached, so reading a section in N extensions costs one pass
    over it, not N."""

    def __init__(self, file_size: int | None = None, *, max_bytes: int = DEFAULT_MAX_KV_BYTES,
                 max_pairs: int | None = DEFAULT_MAX_KV_PAIRS):
        self.file_size, self.max_bytes, self.max_pairs = file_size, max_bytes, max_pairs
        self.h = Header("need_more")
        self.pos = 0  # bytes before this are parsed into ``h``
        self.started = False  # the fixed head (magic, version, counts) is parsed
        self.i = 0  # the next key/value pair
        self.array: _Partial | None = None
        self.key: str | None = None  # the key being read
        self.count = 0  # and its array length (projections)
        self.done: Header | None = None  # ok or malformed: the answer for any longer prefix too

    def parse(self, data) -> Header:
        """The section in ``data`` (a prefix of the file, the same bytes as before and possibly more)."""
        if self.done is not None:
            return self.done
        cur = _Cursor(data, self.file_size, self.max_bytes)
        cur.pos, cur.key, cur.count = self.pos, self.key, self.count
        try:
            self._run(cur)
            self.done = self.h
        except _Short as e:
            need = e.need + _rest_of_vocabulary(cur, self.h)
            return Header("need_more", f"the key/value section goes on past byte {cur.end}: read at least {e.need} "
                          "bytes", need, self.h.version, self.h.n_tensors, self.h.n_kv)
        except _Bad as e:
            self.h.status, self.h.reason, self.h.tokens = "malformed", f"not a valid GGUF file: {e}", None
            self.done = self.h
        finally:
            self.key, self.count = cur.key, cur.count
            cur.buf.release()  # the caller may grow its bytearray now
        return self.done

    def _run(self, cur: _Cursor) -> None:
        h = self.h
        if not self.started:
            _parse_head(cur, h)
            if self.max_pairs is not None and (h.n_kv or 0) > self.max_pairs:
                raise _Bad(f"key/value count {h.n_kv} is over the {self.max_pairs} this reads (real models have "
                           "under a hundred)")
            self.started, self.pos = True, cur.pos
        assert h.n_kv is not None  # the head, read first, sets it
        while self.i < h.n_kv:
            if self.array is None:
                self._pair(cur)
            if self.array is not None:
                self._elements(cur)
            self.i, self.pos = self.i + 1, cur.pos
        align_key = Keys.General.ALIGNMENT  # ggml/src/gguf.cpp:622-636: a uint32 power of two, else the file fails
        if align_key in h.types:
            align = h.values.get(align_key)
            if h.types[align_key] != GGUFValueType.UINT32:
                raise _Bad(f"key '{align_key}' must be of type u32 but is {TYPE_NAMES.get(h.types[align_key])}")
            if not isinstance(align, int) or not align or align & (align - 1):
                raise _Bad(f"alignment {align} is not a power of 2")
        h.kv_end = cur.pos
        h.status = "ok"

    def _pair(self, cur: _Cursor) -> None:
        """One key, its type and its value (an array: its head, then ``_elements``); nothing of it is kept in
        ``h`` until it is whole, so a short prefix leaves it to be read again next time."""
        h, i = self.h, self.i
        key_raw = cur.string(f"key {i}")
        if not key_raw:
            raise _Bad(f"key {i} is empty")
        key = token_text(key_raw)
        if key in h.types:
            raise _Bad(f"duplicate key {key!r}")
        typ = cur.u32(f"type of {key!r}")
        cur.key, cur.count = key, 0
        if typ == _ARRAY:
            etyp = cur.u32(f"array type of {key!r}")
            count = cur.u64(f"array length of {key!r}")
            cur.count = count
            if etyp == _ARRAY or (etyp not in _SIZE and etyp != _STRING):
                raise _Bad(f"key {key!r} has invalid GGUF array element type {etyp}")
            if count > MAX_ARRAY_ELEMENTS:
                raise _Bad(f"key {key!r}: array length {count} exceeds GGUF's maximum {MAX_ARRAY_ELEMENTS}")
            if etyp == _STRING and cur.pos + 8 * count > cur.limit:  # each has its length field
                cur._room(8 * count, f"array {key!r} ({count} strings)")
            # the token types too: a BYTE-typed token can make libllama refuse the file (indexer/gguf/file.py)
            keep = key in (Keys.Tokenizer.LIST, Keys.Tokenizer.TOKEN_TYPE) or count <= KEEP_ARRAY
            self.array = _Partial(key, Array(etyp, count, [] if keep and etyp == _STRING else None),
                                  keep, cur.pos)
            h.types[key] = typ
            self.pos = cur.pos
        elif typ == _STRING:
            raw = cur.string(f"value of {key!r}", keep=True)
            h.types[key] = typ
            h.values[key] = token_text(raw) if len(raw) <= KEEP_STRING else len(raw)
        elif typ in _SIZE:
            value = cur.scalar(typ, f"value of {key!r}")
            h.types[key] = typ
            h.values[key] = value
        else:
            raise _Bad(f"key {key!r} has invalid GGUF type {typ}")

    def _elements(self, cur: _Cursor) -> None:
        """The array's elements from where the last call stopped; whole elements are kept across calls."""
        a, h = self.array, self.h
        assert a is not None  # called while an array is open
        out, key = a.out, a.key
        cur.key, cur.count = key, out.count
        if out.type != _STRING:
            size = _SIZE[out.type] * out.count
            cur._room(size, f"array {key!r} ({out.count} x {TYPE_NAMES[out.type]})")
            if a.keep:
                fmt = "<" + _SCALAR[out.type][1] * out.count
                values = list(struct.unpack_from(fmt, cur.buf, cur.pos))
                out.values = [v != 0 for v in values] if out.type == _BOOL else values
            cur.pos += size
        else:
            self._strings(cur, a)
        h.arrays[key] = out
        if key == Keys.Tokenizer.LIST and out.type == _STRING:
            h.tokens = out.values
        self.array = None

    def _strings(self, cur: _Cursor, a: _Partial) -> None:
        out, key, keep = a.out, a.key, a.keep
        values, count, start = out.values, out.count, a.start
        buf, end = cur.buf, cur.end
        pos, i = cur.pos, a.i
        try:
            while i < count:
                # fast path: the whole element is in the buffer and its length is sane
                if pos + 8 <= end:
                    n = _U64(buf, pos)[0]
                    stop = pos + 8 + n
                    if n <= MAX_STRING_LENGTH and stop <= end and stop <= cur.limit:
                        if keep and values is not None:
                            values.append(token_text(bytes(buf[pos + 8:stop])))
                        pos, i = stop, i + 1
                        continue
                # slow path (short, hostile or at the end of the data): the cursor's checks give the reason
                cur.pos = pos
                # where the array probably ends, from the mean element size so far: the next read asks for all
                project = pos + (count - i) * ((pos - start) // i if i else 16) + (count - i) // 16 if i else None
                raw = cur.string(f"element {i} of {key!r}", keep, project)
                if keep and values is not None:
                    values.append(token_text(raw))
                pos, i = cur.pos, i + 1
        except _Short:
            a.i, self.pos = i, pos  # the whole elements so far stay parsed
            raise
        cur.pos = pos


def _parse_head(cur: _Cursor, h: Header) -> None:
    """Magic, version and the two counts (ggml/src/gguf.cpp:495-540)."""
    magic = cur.u32("magic")
    if magic != GGUF_MAGIC:
        raw = bytes(cur.buf[:4])
        raise _Bad(f"bad magic {raw!r} (expected b'GGUF')")
    version = cur.u32("version")
    if version & 0x0000FFFF == 0 and version:  # ggml/src/gguf.cpp:504-508: byte-swapped, a big-endian file
        raise _Bad(f"version {version} is byte-swapped: a big-endian GGUF, which llama.cpp on a little-endian "
                   "host cannot load")
    if version == 1:
        raise _Bad("GGUFv1 is no longer supported (ggml/src/gguf.cpp:511)")
    if version not in (2, 3):
        raise _Bad(f"unsupported GGUF version {version} (2 and 3 are read)")
    h.version = version
    h.n_tensors = cur.u64("tensor count")
    h.n_kv = n_kv = cur.u64("key/value count")
    if n_kv > MAX_ARRAY_ELEMENTS:
        raise _Bad(f"key/value count {n_kv} is not plausible")


def parse_header(data, file_size: int | None = None, *, max_bytes: int = DEFAULT_MAX_KV_BYTES,
                 max_pairs: int | None = DEFAULT_MAX_KV_PAIRS) -> Header:
    """The key/value section in ``data``, a prefix of a GGUF file of ``file_size`` bytes (when known)."""
    return HeaderParser(file_size, max_bytes=max_bytes, max_pairs=max_pairs).parse(data)


MERGE_BYTES = 20  # a BPE merge string with its length field, a little above real averages (~17)


def _rest_of_vocabulary(cur: _Cursor, h: Header) -> int:
    """Bytes of the vocabulary arrays that usually follow the one the prefix ended in (the converter writes
    tokens, then scores (SPM/UGM) and token types, then merges (BPE): gguf-py/gguf/gguf_writer.py and
    vocab.py), so one more read covers the section instead of one per array."""
    tk = Keys.Tokenizer
    if cur.key is None or cur.key not in (tk.LIST, tk.SCORES, tk.TOKEN_TYPE):
        return 0
    n = cur.count if cur.key == tk.LIST else (h.arrays[tk.LIST].count if tk.LIST in h.arrays else 0)
    model = h.values.get(tk.MODEL)
    after = {tk.LIST: [tk.SCORES, tk.TOKEN_TYPE, tk.MERGES], tk.SCORES: [tk.TOKEN_TYPE, tk.MERGES],
             tk.TOKEN_TYPE: [tk.MERGES]}[cur.key]
    rest = 0
    for key in after:
        if key == tk.SCORES and model in ("llama", "t5"):
            rest += 4 * n + 32
        elif key == tk.TOKEN_TYPE:
            rest += 4 * n + 32
        elif key == tk.MERGES and model == "gpt2":
            rest += MERGE_BYTES * n + 32
    return rest


@dataclass
class Read:
    """What :func:`read_kv_section` did: the header, bytes read and read calls made."""

    header: Header
    bytes_read: int
    requests: int


def read_kv_section(read: Callable[[int, int], bytes], file_size: int | None, *, first: int = FIRST_READ,
                    max_bytes: int = DEFAULT_MAX_KV_BYTES, max_pairs: int | None = DEFAULT_MAX_KV_PAIRS) -> Read:
    """Read a prefix with ``read(start, end)`` (end exclusive) until the key/value section is complete.

    The first read is ``first`` bytes; each further read fetches only the missing bytes, up to where
    the parser projects the section to end (plus a little), never beyond the file or ``max_bytes``.
    """
    limit = min(file_size, max_bytes) if file_size is not None else max_bytes
    parser = HeaderParser(file_size, max_bytes=max_bytes, max_pairs=max_pairs)
    buf = bytearray()
    requests = 0
    want = min(first, limit)
    while True:
        if want > len(buf):
            chunk = read(len(buf), want)
            requests += 1
            if not chunk:
                return Read(Header("malformed", reason=f"not a valid GGUF file: the file ends at byte {len(buf)}, "
                                   "inside the key/value section"), len(buf), requests)
            buf += chunk
        h = parser.parse(buf)  # goes on from where the last prefix ended
        if h.status != "need_more":
            return Read(h, len(buf), requests)
        if len(buf) < want:  # the source gave fewer bytes than asked: the file ended
            return Read(Header("malformed", reason=f"not a valid GGUF file: the file ends at byte {len(buf)}, "
                               "inside the key/value section"), len(buf), requests)
        # the projection plus 1/32 and a tail for the keys after the vocabulary (special ids, chat template);
        # at least a quarter more than held, so a section of many small keys takes a few reads, not thousands
        assert h.need is not None  # need_more says how much
        want = min(limit, max(h.need + h.need // 32 + TAIL, len(buf) + len(buf) // 4))
        if want <= len(buf):
            return Read(Header("malformed", reason=f"the key/value section is longer than the {max_bytes}-byte "
                               "cap"), len(buf), requests)


def read_local(path, *, max_bytes: int = DEFAULT_MAX_KV_BYTES) -> Read:
    """The key/value section of a local .gguf file (only the prefix it needs is read)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        def read(start: int, end: int) -> bytes:
            f.seek(start)
            return f.read(end - start)

        return read_kv_section(read, size, max_bytes=max_bytes)


__all__ = ["Array", "DEFAULT_MAX_KV_BYTES", "DEFAULT_MAX_KV_PAIRS", "FIRST_READ", "Header", "HeaderParser", "Read",
           "parse_header", "read_kv_section", "read_local", "token_text"]
