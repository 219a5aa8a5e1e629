"""Ollama at :data:`VERSION`: every GGUF model runs on a llama-server it builds from llama.cpp ``b10488``
(llm/server.go:108-119), with the drafter of a Modelfile ``DRAFT`` line or the target's own MTP layers. Paths are
relative to the ollama/ollama repository; the llama.cpp lines are the pinned llama.cpp's
(:mod:`indexer.engines.llamacpp`; whether b10488 equals that commit is not verified).

Ollama has no draft-model speculation: a ``DRAFT`` whose GGUF architecture is not ``dflash`` is launched as
``--spec-type draft-mtp`` (llm/llama_server.go:826-835), so a plain small model makes llama-server exit ("failed
to create MTP context"). It runs MTP drafters (the target's own layers, a Gemma-4 assistant) and DFlash heads.
"""

from __future__ import annotations

from .base import NO_SPECULATION, REFUSED, WORKS, Side, Verdict, released
from .llamacpp import LlamaCppHeads
from .setup import Setup

NAME = "ollama"
VERSION = "fb307609"  # github:ollama/ollama HEAD, 2026-08-21
DRAFT_TYPE = "llm/llama_server.go:826-835"  # externalDraftType
NO_MTP_CONTEXT = "llama.cpp src/llama-context.cpp:3880-3885"
DRAFT_NUM_PREDICT = 4  # the Modelfile value the commands set (api/types.go default for a DRAFT)


def _kind(side: Side) -> str | None:
    """The drafter kind a side's GGUF header declares (dflash, mtp), when it is a separate head file."""
    head = (side.arch.head if side.arch is not None else None) or {}
    return head.get("kind") if head and not head.get("embedded") else None


def rule(t: Side, d: Side) -> Verdict:
    """A DRAFT is launched as draft-mtp unless it is a DFlash GGUF: only MTP and DFlash drafters run."""
    kind = _kind(d)
    if kind in ("mtp", "dflash"):
        spec = "draft-dflash" if kind == "dflash" else "draft-mtp"
        gguf_arch = d.arch.gguf_arch if d.arch else None
        return Verdict(WORKS, [f"the draft's GGUF is a {kind.upper()} drafter ({gguf_arch}): Ollama launches "
                               f"its DRAFT with --spec-type {spec} ({DRAFT_TYPE})"])
    what = f"the draft is a {kind} head" if kind else "Ollama takes no separate draft models"
    return Verdict(REFUSED, [f"{what}: Ollama launches every Modelfile DRAFT whose GGUF architecture is "
                             f"not dflash as --spec-type draft-mtp ({DRAFT_TYPE}), and llama-server exits on a draft "
                             f"without MTP layers (\"failed to create MTP context\", {NO_MTP_CONTEXT}): Ollama runs "
                             "MTP and DFlash drafters only"])


def fix(outcome: str, *, shared: bool, sizes: tuple, tli: str, tli_blocked) -> str | None:
    """No draft model runs on Ollama: its MTP and DFlash drafters do."""
    if outcome != REFUSED:
        return None
    return ("use an MTP or DFlash drafter instead: `indexer query --target GGUF_REPO --engine ollama --method "
            "mtp|dflash`")


def _from(target: str) -> str:
    """The Modelfile FROM of a target: a local GGUF, else the Hub reference Ollama pulls (hf.co/REPO:QUANT)."""
    return target if target.lower().endswith(".gguf") or target.startswith((".", "/")) else f"hf.co/{target}"


def modelfile(target: str, draft: str | None) -> list[str]:
    """The Modelfile lines: FROM, DRAFT (a local path only: parser/parser.go:92-110, server/create.go:48) and
    draft_num_predict, which embedded MTP needs set (server/routes.go:136-156, docs/modelfile.mdx:156)."""
    lines = [f"FROM {_from(target)}"]
    if draft:
        lines.append("DRAFT ./draft")
    return [*lines, f"PARAMETER draft_num_predict {DRAFT_NUM_PREDICT}"]


class OllamaHeads(LlamaCppHeads):
    """Ollama's runner is llama-server, so its checks are llama.cpp's; it passes --spec-type itself: a DFlash DRAFT
    is detected by its architecture, anything else runs as MTP (llm/llama_server.go:826-835)."""

    engine = NAME
    methods = {  # --method -> (the llama-server --spec-type Ollama passes, where it decides it)
        "mtp": ("draft-mtp", "llm/llama_server.go:837-851, 897-913 (hasMTPDraft, externalDraftType)"),
        "dflash": ("draft-dflash", DRAFT_TYPE),
    }

    def fit(self, method: str, head: dict | None, target) -> list[tuple[str, bool, str, str]]:
        """llama-server's checks, and embedded MTP needs draft_num_predict (the Modelfile sets it)."""
        checks = super().fit(method, head, target)
        if head is None:
            checks.append(("mtp", True, "embedded MTP is off unless draft_num_predict is set: the Modelfile sets it",
                           "server/routes.go:136-156, docs/modelfile.mdx:156"))
        return checks

    def launch(self, target: str, head: str | None, spec_type: str) -> str:
        """Download the drafter (DRAFT takes local paths only), write the Modelfile, create the model."""
        steps = []
        if head:
            repo, _, quant = head.partition(":")
            steps.append(f"hf download {repo}" + (f" --include '*{quant}*.gguf'" if quant else "")
                         + " --local-dir draft")
        text = "\\n".join(modelfile(target, head))
        name = target.split(":", 1)[0].rsplit("/", 1)[-1].lower()
        steps.append(f"printf '{text}\\n' > Modelfile && ollama create {name} -f Modelfile")
        return " && ".join(steps) + f"  # llama-server --spec-type {spec_type}"


HEADS = OllamaHeads()


def launch(setup: Setup) -> list[str]:
    """The Modelfile that would pair them (its DRAFT runs as draft-mtp: see rule)."""
    draft = setup.draft
    name = f"{draft.repo}:{draft.tag}" if draft is not None and draft.tag else (draft.repo if draft else None)
    target = f"{setup.target.repo}:{setup.target.tag}" if setup.target.tag else setup.target.repo
    return [HEADS.launch(target, name, "draft-mtp")]


def sizes(t: Side, d: Side) -> tuple[int | None, int | None]:
    """Ollama compares no vocabulary sizes of its own for a drafter."""
    return None, None


ENGINE = released(
    releases=(VERSION,),
    name=NAME, display="Ollama (llama-server runner)", version=f"ollama @{VERSION} (llama.cpp b10488)",
    sources={
        "DRAFT runs as draft-mtp unless its architecture is dflash": "llm/llama_server.go:826-835",
        "embedded MTP needs draft_num_predict": "server/routes.go:136-156",
        "DRAFT takes local paths only": "parser/parser.go:92-110, server/create.go:48",
        "llama-server exits without MTP layers": "llama.cpp src/llama-context.cpp:3880-3885",
    },
    facts=("arch.head",),
    rule=rule, class_key=(), launch=launch, sizes=sizes, fix=fix, gguf_rule=rule,
    words={WORKS: "works", REFUSED: "refuses to start (takes no draft model)",
           NO_SPECULATION: "serves without speculation (embedded MTP without draft_num_predict)"},
    refuses_drafts=("Ollama takes no separate draft models: a Modelfile DRAFT that is not a DFlash GGUF is launched "
                    f"as --spec-type draft-mtp ({DRAFT_TYPE}) and a model without MTP layers makes llama-server exit; "
                    "ask --method mtp or --method dflash"),
    heads=HEADS)
