"""Rebuild indexer/vocab/reference_text/ (the text whose token counts measure vocabulary agreement).

Run once, offline, from the worktree root: ``python docs/reference_text.py``. Every part comes from
files a Debian system with CPython 3.11 has, under the licence stated in indexer/vocab/reference_text/README.md.
The output is deterministic for the same inputs; the counts stored per tokenizer depend on it, so a
change of the text means recounting (``indexer compute`` recounts tokenizers whose counts are stale).
"""

from __future__ import annotations

import gettext
import sys
import sysconfig
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "indexer" / "vocab" / "reference_text"
LICENCES = ("/usr/share/common-licenses/GPL-3", "/usr/share/common-licenses/Apache-2.0")
LANGUAGES = ("de", "fr", "es", "it", "pl", "pt_BR", "ru", "uk", "el", "tr", "vi", "he", "ja", "zh_CN", "ko")
PYTHON_MODULES = ("textwrap.py", "heapq.py", "bisect.py", "json/encoder.py", "json/decoder.py", "shlex.py")
CJK = ("big5", "big5hkscs", "cp949", "euc_jisx0213", "euc_jp", "euc_kr", "gb18030", "gb2312", "gbk", "hz",
       "iso2022_jp", "iso2022_kr", "johab", "shift_jis", "shift_jisx0213")


def translations(domain: str, lang: str) -> str:
    """Every msgstr of one GNU gettext catalog (translated prose of a GPL-3+ program), in msgid order."""
    path = Path(f"/usr/share/locale/{lang}/LC_MESSAGES/{domain}.mo")
    catalog = gettext.GNUTranslations(path.open("rb"))._catalog  # noqa: SLF001 - the parsed .mo
    out = []
    for key in sorted(catalog, key=str):
        value = catalog[key]
        if key and isinstance(value, str) and value.strip():
            out.append(value.strip())
    return "\n".join(out)


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    parts = {
        "licences.txt": "\n\n".join(Path(p).read_text("utf-8") for p in LICENCES),
        "translations.txt": "\n\n".join(translations("grep", lang) for lang in LANGUAGES),
        "cjk.txt": "\n\n".join((stdlib / "test" / "cjkencodings" / f"{name}-utf8.txt").read_text("utf-8")
                               for name in CJK),
        "python.txt": "\n\n".join((stdlib / m).read_text("utf-8") for m in PYTHON_MODULES),
    }
    for name, text in parts.items():
        (OUT / name).write_text(text.rstrip("\n") + "\n", "utf-8")
        print(f"{name}: {len(text.encode()):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
