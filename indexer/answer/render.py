"""The readable answers: sizes and ratios in words, the draft table of ``indexer query``, the head methods'
answers and overview, and ``indexer check TARGET HEAD``'s explanation. Reads only the ``--json`` shape,
so what the CLI prints is what the site's JSON says.
"""

from __future__ import annotations

from .. import engines as registry
from ..engines.vllm import has_tli
from ..vocab.agreement import summary
from .speedup import words

ENGINE_NAMES = registry.ENGINE_NAMES


def fmt_params(n: int | None) -> str:
    """A parameter count in words: ``500M``, ``7.24B`` (the site's cells use it too)."""
    if n is None:
        return "?"
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return str(n)


ESTIMATED_FROM = {"config": "estimated from config", "name": "estimated from the repo name"}


def fmt_size(params: int | None, source: str | None = None, active: int | None = None, *,
             long: bool = False) -> str:
    """A size in words, estimates marked with ``~``: ``500M``, ``~7.24B``, ``~30.5B (3.3B active)``;
    ``long`` adds the unit and where an estimate came from: ``~7.24B parameters (estimated from config)``."""
    if params is None:
        return "size unknown"
    mark = "~" if source in ESTIMATED_FROM else ""
    if not long:
        return mark + fmt_params(params) + (f" ({fmt_params(active)} active)" if active is not None else "")
    words = f"{mark}{fmt_params(params)} parameters"
    if active is not None:
        words += f", {mark}{fmt_params(active)} active"
    return words + (f" ({ESTIMATED_FROM[str(source)]})" if mark else "")


def fmt_ratio(r: float | None) -> str:
    """A draft's size against the target's: ``1/14``."""
    if r is None:
        return "?"
    return f"1/{1 / r:.0f}" if 0 < r < 1 else f"{r:.2f}"



TOO_LITTLE = ("the catalog holds too little to answer: it has not looked for drafts of this target (it holds it "
              "from a live answer alone); ask the Hub with --live, or run `indexer pull` for the published catalog")


def _summary_line(result: dict) -> str:
    s = result["summary"]
    if s.get("catalog_looked") is False:
        return "summary: " + TOO_LITTLE
    words = (f"drafts on {', '.join(s['engines_with_drafts'])}" if s["engines_with_drafts"]
             else "no engine has drafts for this target")
    if s["engines_with_drafts"] and s["engines_without_drafts"]:
        words += f"; none on {', '.join(s['engines_without_drafts'])}"
    if s.get("engines_unknown"):
        words += f"; unknown on {', '.join(s['engines_unknown'])}"
    fix = s["cheapest_fix"]
    if fix:
        words += f"; cheapest near-miss fix ({fix['engine']}, {fix['repo_id']}): {fix['fix']}"
    return "summary: " + words


def render(result: dict, *, all_members: bool = False, near_misses: bool = False) -> str:
    """The readable table, the launch flags of the best draft, near misses and the cross-engine summary."""
    if result.get("method", "draft") != "draft":
        return render_overview(result) if result["method"] == "all" else render_method(result)
    t, engine = result["target"], result["engine"]
    size = fmt_size(t["params"], t["params_source"], t["params_active"])
    if t["params"] is not None:
        size += " parameters" + (f", {ESTIMATED_FROM[t['params_source']]}" if size.startswith("~") else "")
    lines = [f"target: {t['repo_id']} ({size})"]
    if t.get("note"):
        lines.append(f"note: {t['note']}")
    block = result.get("hardware")
    lines += device_lines(block)
    n = t["class_members"]
    release = f" {result['version']}" if result.get("version") else ""
    if result.get("runs_as"):  # LM Studio on a GGUF target: its llama.cpp engine answers
        release += f" ({result['runs_as']})"
    if result.get("refused"):  # the class is the refusal: said once, on the line below
        lines.append(f"engine: {ENGINE_NAMES[engine]}{release}")
    else:
        more = t.get("agreeing_members") or 0
        also = f", and {more} more whose vocabularies work with it" if more else ""
        lines.append(f"engine: {ENGINE_NAMES[engine]}{release}; class: {t['class']} "
                     f"({n} repo{'' if n == 1 else 's'}{also})")
    if result.get("by_version"):
        lines.append(f"by version: {registry.versions_line(engine, result['by_version'])}")
    drafts = result["drafts"]
    others = [e for e in result["summary"]["engines_with_drafts"] if e != engine]
    if result.get("refused"):
        lines.append(f"no drafts: {result['refused']}")
    elif result.get("unknown"):
        lines.append(f"drafts unknown: {result['unknown']}")
    elif not drafts and result["summary"].get("catalog_looked") is False:
        pass  # not "no drafts": the summary line says why the catalog cannot tell
    elif not drafts:
        line = f"no drafts found for {ENGINE_NAMES[engine]}"
        if others:
            line += f"; other engines have candidates: {', '.join(others)} (try --engine {others[0]})"
        elif not all_members:
            line += "; no other engine has any either (try --near-misses)"
        lines.append(line)
    else:
        if t["params"] is None and not all_members:
            lines.append("the target's size is unknown: drafts are not filtered by size")
        width = min(60, max(len(d["repo_id"]) for d in drafts))
        psize = max(7, *(len(fmt_size(d["params"], d["params_source"], d["params_active"])) for d in drafts))
        lines.append(f"{'repo':{width}}  {'params':>{psize}}  {'ratio':>6}  {'speed-up':>8}  {'downloads':>10}  why")
        for d in drafts:
            why = "; ".join(d["reasons"][1:])
            a = d.get("agreement")
            if a is not None:  # flagged differences beside the draft; degraded ones marked
                mark = "DEGRADED: " if d["outcome"] == registry.DEGRADED else ""
                figure = a["text_agreement"] if a["text_agreement"] is not None else a["ids_agreement"]
                n = a["differing_ids"]
                if n and figure >= 0.9995:  # "100.0% agree, 2 differ" reads as a contradiction
                    agree = f"all but {n} of {a['ids_target']} tokens agree"
                else:
                    agree = f"{figure:.1%} agree, {n} token{'' if n == 1 else 's'} differ"
                why = f"{mark}{agree}; {why}"
            if d["outcome"] == registry.WRONG_OUTPUT:  # an architecture row: it starts, the output can be wrong
                why = f"WRONG OUTPUT POSSIBLE: {why}"
            elif d.get("demoted"):
                why = f"ranked lower: {why}"
            dl = d["downloads"] if d["downloads"] is not None else "?"
            size = fmt_size(d["params"], d["params_source"], d["params_active"])
            speed = d.get("speedup") or {}
            fig = f"≈{speed['estimate']:.2f}×" if speed.get("estimate") is not None else "?"
            if speed.get("slower"):
                why = f"SLOWER than no draft: {why}"
            lines.append(f"{d['repo_id']:{width}}  {size:>{psize}}  {fmt_ratio(d['ratio']):>6}  {fig:>8}  {dl:>10}  "
                         f"{why}")
        if any(d["params_source"] in ESTIMATED_FROM for d in drafts):
            lines.append("(~ = estimated: from config.json, or from the size in the repo name)")
        speed = (drafts[0].get("speedup") or {}) if not all_members else {}
        if speed.get("estimate") is not None:

            lines.append(f"speed-up (ranked by it): {words(speed)}; {speed['why']}")
        elif speed:
            lines.append(f"speed-up: {speed['why']}")
        lines.append(f"accepted because: {drafts[0]['reasons'][0]}")
        if not all_members and speed.get("slower"):
            lines.append(f"no draft is expected to pay on {speed['hardware']}: every estimate is below 1.0×, so "
                         "serving without speculation is faster (or try another --hardware, --quant, --task); "
                         f"the likeliest draft would launch as:\n  {launch_lines(drafts[0])}")
        elif not all_members:
            warning = not_here_line(block, engine, (drafts[0].get("setup") or {}).get("hardware"))
            if warning:
                lines.append(warning)
            lines.append(f"launch with the best draft:\n  {launch_lines(drafts[0])}")
    if result["near_misses"]:
        lines.append("near misses (one check fails):")
        for m in result["near_misses"]:
            size = f"{fmt_size(m['params'], m['params_source'], m['params_active'])}, {fmt_ratio(m['ratio'])}"
            said = registry.ENGINES[engine].words.get(m["outcome"], m["outcome"])
            lines.append(f"  {m['repo_id']} ({size}) {m['outcome']} ({said}): {m['reason']}")
            if m["fix"]:
                lines.append(f"    fix: {m['fix']}")
    elif near_misses and result["summary"].get("catalog_looked") is not False:  # unlooked: the summary says why
        lines.append("near misses: none")
    lines.append(_summary_line(result))
    return "\n".join(lines)


# ---------------------------------------------------------------- the device (answer/lead.py)


def fmt_x(x: float) -> str:
    """≈1.4× (two decimals near 1.0: ≈0.97×, never ≈1.0× for a slower one)."""
    return f"≈{x:.{2 if round(x, 1) == 1.0 else 1}f}×"


def lead_line(block: dict) -> str:
    """on M4 Max (apple): llama.cpp ≈1.4× with X, MLX ≈1.3× with Y, ...; SGLang, vLLM do not run there."""
    parts = []
    for r in block["lead"]:
        if r["estimate"] is not None:
            slower = " (slower than no draft)" if r["slower"] else ""
            rate = f", ≈{r['tok_s']:.0f} tok/s" if r["tok_s"] else ""
            parts.append(f"{r['engine']} {fmt_x(r['estimate'])}{slower} with {r['draft']} ({r['target_quant']} "
                         f"target{rate})")
        else:
            parts.append(f"{r['engine']} {'no drafts' if not r['drafts'] else 'speed-up unknown'}")
    absent = [n for n in block["not_here"] if registry.ENGINES[n].refuses_drafts is None]
    line = (f"on {block['name']} ({block['kind']}), fastest first: "
            + (", ".join(parts) or "no engine runs draft models there"))
    if absent:
        line += f"; {', '.join(absent)} do{'es' if len(absent) == 1 else ''} not run there"
    return line


def device_lines(block: dict | None) -> list[str]:
    """The lines a text answer prints about the device: which one a short name took, and the lead."""
    if not block:
        return []
    lines = []
    if block.get("note"):
        lines.append(f"hardware: {block['note']}; name the other with --hardware")
    if block.get("lead") is not None:
        lines.append(lead_line(block) + (f"; answering for {block['lead'][0]['engine']} (--engine NAME for another)"
                                         if block["lead"] else ""))
    return lines


def not_here_line(block: dict | None, engine: str, setup_on: str | None = None) -> str | None:
    """Said before a launch command for an engine that does not run on the named device; ``setup_on``: the device
    whose estimated setup the command runs."""
    if not block or block["runs"]:
        return None
    others = ", ".join(block["engines"]) or "none"
    which = (f"the command below runs the setup estimated on {setup_on} (--hardware \"{setup_on}\" prints its "
             "speed-up)" if setup_on else "the command below is for another device")
    return (f"NOT ON {block['name'].upper()}: {block['why']}; engines that run there: {others} "
            f"(--engine NAME, or leave --engine out to rank them); {which}")


def render_method(result: dict) -> str:
    """The readable answer of a head method (the draft table's layout: repo, tier, size, why, launch)."""
    t, engine, method = result["target"], result["engine"], result["method"]
    lines = [f"target: {t['repo_id']} ({t['class']}" + (f", {t['mtp_layers']} MTP layer(s))" if t["mtp_layers"]
                                                        else ")"),
             f"engine: {engine}; method: {method}"]
    if t.get("note"):
        lines.append(f"note: {t['note']}")
    if not result["drafts"]:
        lines.append(f"no {method} {'for this target' if method == 'mtp' else 'heads fit this target'} on "
                     f"{engine}" + (f": {result['note']}" if result.get("note") else ""))
    for d in result["drafts"]:
        tier = f" [{d['tier']}]" if d.get("tier") else ""
        size = f" ({rules_params(d['params'])})" if d.get("params") else ""
        lines.append(f"{d['repo_id']}{tier}{size}")
        lines += [f"  - {r}" for r in d["reasons"]]
        if d.get("speedup"):
            lines.append(f"  speed-up: {_speed_words(d['speedup'])}")
        lines.append(f"  $ {d['launch']}")
    if result["near_misses"]:
        lines.append("near misses (a shape check fails):")
        for m in result["near_misses"]:
            lines.append(f"  {m['repo_id']}: {m['failed_check']}: {m['reason']}")
    return "\n".join(lines)


def rules_params(n: int | None) -> str:
    """A head's size: always the estimate from its config."""
    return f"{fmt_size(n, 'config')} parameters, estimated from config"


def render_overview(result: dict) -> str:
    """``--method all``: per engine, MTP, the best head of each method, the best draft and n-gram."""
    t = result["target"]
    lines = [f"target: {t['repo_id']} ({t['class']})"]
    for view in result["engines"].values():
        lines.append(f"{view['engine']}:")
        if view["mtp"] is not None:
            m = view["mtp"]
            if m["fits"]:
                said = f" ({_speed_words(m['speedup'])})" if m.get("speedup") else ""
                lines.append(f"  mtp: built in{said}\n    $ {m['launch']}")
            else:
                lines.append(f"  mtp: no ({'; '.join(m['reasons'])})")
            if view["heads"] is None:  # built-in MTP only (transformers' generate(use_mtp=True))
                lines.append(f"  heads: {view['note']}")
            for method, hs in (view["heads"] or {}).items():
                if hs:
                    said = f" ({_speed_words(hs[0]['speedup'])})" if hs[0].get("speedup") else ""
                    lines.append(f"  {method}: {hs[0]['repo_id']} [{hs[0]['tier']}]"
                                 + (f" (+{len(hs) - 1} more)" if len(hs) > 1 else "") + said)
                    lines.append(f"    $ {hs[0]['launch']}")
                else:
                    lines.append(f"  {method}: no fitting head")
        else:
            lines.append(f"  heads: {view['note']}")
        if view["drafts"]:
            best = view["drafts"][0]
            speed = best.get("speedup") or {}
            said = ""
            if speed.get("estimate") is not None:

                said = f" ({words(speed)})"
            lines.append(f"  draft: {best['repo_id']}{said}\n    $ {best['launch']}")
        else:
            lines.append(f"  draft: none{' (' + view['drafts_error'] + ')' if view.get('drafts_error') else ''}")
        if view["ngram"] is not None:
            lines.append(f"  ngram: needs nothing (no estimate: it pays as much as the output repeats the prompt)"
                         f"\n    $ {view['ngram']['launch']}")
        best = view.get("best")
        if best and best["compared"] > 1:
            what = "built-in MTP" if best["method"] == "mtp" else (
                f"draft {best['repo_id']}" if best["method"] == "draft" else f"{best['method']} head {best['repo_id']}")
            lines.append(f"  best expected on {best['hardware']}: {what}, ≈{best['estimate']:.1f}× "
                         f"(of {best['compared']} compared)")
    return "\n".join(lines)


def _speed_words(speed: dict) -> str:

    return words(speed) if speed.get("estimate") is not None else speed["why"]


def render_explain(result: dict) -> str:
    """``indexer check TARGET HEAD``: per engine the verdict, every shape check with its source, the lineage."""
    h, t = result["head"], result["target"]
    lines = [f"target: {t['repo_id']}", f"head:   {h['repo_id']} ({h['algorithm']}, {h['format']} format; "
             f"trained for {', '.join(result['declared_for']) or 'nothing declared'})"]
    for engine, v in result["engines"].items():
        verdict = f"FITS ({v['tier']})" if v["fits"] else f"NO FIT ({v['failed_check']})"
        lines.append(f"  {verdict:20} {engine}")
        for c in v["checks"]:
            lines.append(f"    {'ok ' if c['ok'] else 'NO '} {c['check']:12} {c['detail']}  [{c['source']}]")
        lines.append(f"    lineage: {v['reasons'][-1]}")
        if v.get("warning"):
            lines.append(f"    ! {v['warning']}")
        if v.get("speedups"):
            lines.append(f"    speed-up {'; '.join(_speed_words(s) for s in v['speedups'])}")
        if v["launch"]:
            lines.append(f"    $ {v['launch']}")
    return "\n".join(lines)


FACT_WIDTH = 90  # characters of an engine's deciding fact on its line; the rest under --verbose and in --json


def _without_asides(text: str, drop=lambda aside: True) -> str:
    """``text`` without its parenthesised asides (`` (…)``, nested ones included) that ``drop`` says go."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0 and i > 0 and text[i - 1] == " ":
                out.append(text[start:i - 1])
                start = i - 1
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0 and start < i and text[start] == " ":
                aside = text[start:i + 1]
                out.append("" if drop(aside) else aside)
                start = i + 1
    out.append(text[start:])
    return "".join(out)


def deciding_fact(verdict: dict) -> str:
    """The fact that decides an engine's verdict: its first reason up to the first "; " (what follows is the
    agreement sentence or a warning, said once below or under --verbose); when that is too long, without its
    asides in parentheses, then up to its first ": " (``Ollama takes no separate draft models: …``), then cut
    at a word near FACT_WIDTH."""
    fact = verdict["reasons"][0].split("; ")[0] if verdict["reasons"] else ""
    if len(fact) > FACT_WIDTH:
        fact = _without_asides(fact)
    head = fact.find(": ")
    if len(fact) > FACT_WIDTH and head >= 20:
        fact = fact[:head]
    if len(fact) > FACT_WIDTH:
        fact = fact[:FACT_WIDTH].rsplit(" ", 1)[0].rstrip(",;:(") + " …"
    return fact


def short_fix(fix: str) -> str:
    """A fix without its source citations and counts in parentheses (``--verbose`` and ``--json`` keep them)."""
    return _without_asides(fix, lambda aside: ".py:" in aside or "token intersection" in aside)


def engine_line(name: str, verdict: dict, *, verbose: bool = False) -> str:
    """One engine's line of ``indexer check``: verdict, engine, the deciding fact (every reason with
    ``verbose``). Kept one function so other fragments of a line (a version, a speed-up) slot in here."""
    words = "; ".join(verdict["reasons"]) if verbose else deciding_fact(verdict)
    label = f"{name} {verdict['version']}" if verdict.get("version") else name
    return f"  {verdict['outcome'].upper():14} {label:20} {words}"


def measured_words(m: dict, estimate: float | None = None) -> str:
    """measured 1.62× on M4 Max (3 runs); estimated 1.5×"""
    where = f" on {m['hardware']}" if m.get("hardware") else " on an unnamed device"
    runs = f"{m['runs']} run{'' if m['runs'] == 1 else 's'}"
    head = (f"measured {m['speedup']:.2f}×" if m.get("speedup") is not None else
            f"measured acceptance {m['acceptance']:.2f} (no baseline, so no speed-up)" if m.get("acceptance")
            is not None else "measured, without a speed-up or an acceptance")
    est = f"; estimated {estimate:.1f}×" if estimate is not None else ""
    return f"{head}{where} ({runs}, {m['task']}){est}"


def launch_lines(entry: dict) -> str:
    """An entry's launch command, its steps one per line (a download, a conversion, then the engine)."""
    steps = (entry.get("setup") or {}).get("steps")
    return "\n  ".join(steps) if steps else entry["launch"]


def speed_line(speedups: list[dict]) -> str:
    """The expected speed-up under an engine's line: one fragment per device (answer/speedup.py words)."""
    parts: list[str] = []
    unknown: dict[str, list[str]] = {}  # why -> devices: one reason said once for every device it holds on
    for s in speedups:
        if s.get("estimate") is None:
            if s["why"] not in unknown:
                unknown[s["why"]] = []
                parts.append(s["why"])
            unknown[s["why"]].append(s["hardware"])
        else:
            parts.append(words(s))
    parts = [f"{', '.join(unknown[p])}: {p}" if p in unknown else p for p in parts]
    return f"  {'':14} {'':20} speed-up {'; '.join(parts)}"


def render_check(result: dict, *, verbose: bool = False) -> str:
    """``indexer check``'s readable answer: a head's explanation, or one short line per engine, the shared facts
    (tokens, agreement) once, the fixes and launch commands; ``verbose``: every engine's reasons in full."""
    if result.get("kind") == "head":
        return render_explain(result)
    lines = [f"target: {result['target']}", f"draft:  {result['draft']}"]  # as found: case, URL, GGUF base
    if result.get("hardware_note"):
        lines.append(f"hardware: {result['hardware_note']}; name the other with --hardware")
    if result.get("not_a_draft"):
        lines.append(f"NOT A DRAFT: {result['not_a_draft']} (query --all marks such repos not_a_draft): the "
                     "verdicts say whether the engines start with the pair, the estimates are no speed-up")
    for name, verdict in result["verdicts"].items():
        lines.append(engine_line(name, verdict, verbose=verbose))
        if verdict.get("versions"):
            lines.append(f"  {'':14} {'':20} by version: {verdict['versions']}")
        if verdict.get("speedups"):
            lines.append(speed_line(verdict["speedups"]))
        if verdict.get("measured"):
            estimate = next((s.get("estimate") for s in verdict.get("speedups") or []
                             if s.get("hardware") == verdict["measured"]["hardware"]), None)
            lines.append(f"  {'':14} {'':20} {measured_words(verdict['measured'], estimate)}")
    det = result["details"]
    if det["added_only_in_target"]:
        lines.append(f"  added tokens only in target: {_short(det['added_only_in_target'])}")
    if det["added_only_in_draft"]:
        lines.append(f"  added tokens only in draft:  {_short(det['added_only_in_draft'])}")
    for diff in det["first_differing_ids"]:
        lines.append(f"  id {diff['id']}: target {diff['target']!r}, draft {diff['draft']!r}")
    tli = result["tli"]
    if tli is not None:

        release = (result["verdicts"].get("vllm") or {}).get("version")
        if release in registry.ENGINES["vllm"].releases and has_tli(release):
            both = "" if tli["same_count"] else f"; transformers counts {tli['intersection_transformers']}"
            lines.append(f"  TLI intersection: {tli['intersection']} tokens as vLLM {release} counts them "
                         f"({tli['ratio']:.1%} of the draft){both}")
        else:  # this vLLM has no TLI: only transformers' assisted generation translates vocabularies
            lines.append(f"  TLI intersection: {tli['intersection_transformers']} tokens as transformers' assisted "
                         f"generation counts them (vLLM {release} has no TLI)")
    if result["agreement"] is not None and not result["agreement"]["identical"]:

        lines.append(f"  agreement: {summary(result['agreement'])}")
    stuck = []
    for name, fix in result["fixes"].items():
        if fix:
            lines.append(f"  fix ({name}): {fix if verbose else short_fix(fix)}")
        elif result["verdicts"][name]["outcome"] not in ("works", "unknown") and not _not_judged(name, result):
            stuck.append(name)
    if stuck:
        lines.append(f"  no fix changes the outcome on: {', '.join(stuck)}")
    for name, cmd in (result.get("launch") or {}).items():
        on = (result.get("launch_on") or {}).get(name)
        lines.append(f"  launch ({name}{f', as estimated on {on}' if on else ''}): {cmd}")
    return "\n".join(lines)


def _not_judged(engine: str, result: dict) -> bool:
    """A GGUF file on an engine that loads none (``Engine.gguf_rule`` is None): its verdict says where to ask
    instead, and no fix applies."""
    read = any((g or {}).get("source") == "read" for g in result["details"]["gguf"].values())
    return read and registry.ENGINES[engine].gguf_rule is None


def _short(tokens: list[str], n: int = 8) -> str:
    shown = ", ".join(repr(t) for t in tokens[:n])
    return shown + (f", ... ({len(tokens)} in all)" if len(tokens) > n else "")


def _flat(key: str, value) -> list[tuple[str, str]]:
    """(dotted key, words) pairs: a nested dict one line per leaf, a list comma-separated, never a Python repr."""
    if isinstance(value, dict):
        if not value:
            return [(key, "-")]
        return [pair for k, v in value.items() for pair in _flat(f"{key}.{k}", v)]
    if isinstance(value, (list, tuple)):
        return [(key, ", ".join(_words(v) for v in value) if value else "-")]
    return [(key, _words(value))]


def _words(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_words(v)}" for k, v in value.items())
    return "-" if value is None else str(value)


def _columns(pairs: list[tuple[str, str]]) -> list[str]:
    """Two aligned columns, as wide as the longest key (a long key never runs into its value)."""
    width = max((len(k) for k, _ in pairs), default=0)
    return [f"{k:{width}}  {v}" for k, v in pairs]


def render_fingerprint(facts: dict) -> str:
    """``indexer fingerprint DIR``: one fact a line, the config's under ``config.``, the first 50 added tokens."""
    facts = dict(facts)
    added = facts.pop("added_tokens")
    pairs = [pair for key, value in facts.items() for pair in _flat(key, value)]
    pairs.append(("added_tokens", str(len(added))))
    lines = _columns(pairs)
    for t in added[:50]:
        lines.append(f"  {t['id']:>8}  {t['content']!r}{'  (special)' if t['special'] else ''}")
    if len(added) > 50:
        lines.append(f"  ... {len(added) - 50} more (use --json)")
    return "\n".join(lines)


def render_gguf_facts(facts: dict) -> str:
    """``indexer fingerprint FILE.gguf``: one fact a line, each note on its own."""
    pairs = []
    for key, value in facts.items():
        if key == "notes":
            pairs += [("note", note) for note in value]
        else:
            pairs += _flat(key, value)
    return "\n".join(_columns(pairs))
