"""``indexer query --live``: candidate drafts on the Hub that the catalog lacks, fetched within a request budget.

Where it looks (one listing call each, sorted by downloads, ``LISTING_LIMIT`` items):

* repos whose ``base_model`` tags name the target or the target's base: the Hub tags every derived repo
  ``base_model:<id>`` (HUB-API §0.1.2) and lists them with ``filter=base_model:<id>`` (the client sends
  ``filter``, huggingface_hub hf_api.py:2440-2447);
* the target's author's other repos (``author=``);
* the family's search terms (indexer/data/families.toml, ``crawl.families``).

A candidate is fetched (paths-info and the blobs the store lacks, ``live.Live.crawl``: the listing already gave
its sha, so no model_info) only when it can be a draft: not in the catalog yet, public, smaller than the target
when both sizes are known, and not a GGUF-only repo unless the engine's classes are GGUF vocabularies
(llama.cpp: the other engines' classes never hold a repo without tokenizer files, catalog/compute.py).
The likeliest first (inside the preferred size ratio, then by downloads), in rounds while the budget's worst
case allows: each round's cost is bounded before it starts, so the budget is never exceeded (a target the
catalog lacks is fetched whatever the budget: without it there is no answer). What was skipped is counted by why.
"""

from __future__ import annotations

import sys

from tqdm import tqdm

from .. import engines as registry
from ..catalog import repoids
from ..catalog.classes import RATIO_HIGH, RATIO_LOW
from ..catalog.reader import Reader, json_value
from ..crawl.families import family_of, load_families
from ..crawl.fetch import describe, siblings_may_hide_gguf
from ..errors import CatalogError
from ..files import VOCAB_FILES, WANTED_FILES
from ..hub.listed import Listed, base_models_from_tags
from ..vocab.params import estimate_from_name

LISTING_LIMIT = 50  # items per listing call (one page on the Hub and the imitation)
GGUF_READS = 2  # resolver calls of one GGUF header read, at most (gguf/header.py: a first read, one extension)
MIN_FOR_LISTING = 4  # requests that must be left after a listing for it to be worth one


def _sources(target: dict, families) -> list[tuple[str, dict]]:
    """(label, list_models kwargs) in the order they are asked."""
    out = [(f"base_model:{target['repo_id']}", {"filter": f"base_model:{target['repo_id']}"})]
    for base in (target.get("base_models") or [])[:1]:
        out.append((f"base_model:{base}", {"filter": f"base_model:{base}"}))
    if target.get("author"):
        out.append((f"author {target['author']}", {"author": target["author"]}))
    fam = next((f for f in families if f.name == target.get("family")), None)
    for term in (fam.search if fam else ()):
        out.append((f"search {term}", {"search": term}))
    return out


def _target_facts(db: str | None, repo_id: str) -> dict | None:
    cat = Reader(db, needs="repos")
    try:
        row = repoids.size_facts(cat, repo_id)
    finally:
        cat.close()
    if row is None:
        return None
    params = row[4]
    if params is None:
        est = estimate_from_name(row[0])
        params = est.total if est else None
    return {"repo_id": row[0], "author": row[1], "family": row[2], "base_models": json_value(row[3]),
            "params": params}


def _held(db: str | None, ids) -> set[str]:
    ids = sorted(set(ids))
    if not ids:
        return set()
    try:
        cat = Reader(db, needs="repos")
    except CatalogError:  # no catalog yet: the first crawl round creates it
        return set()
    try:
        return repoids.held(cat, ids)
    finally:
        cat.close()


def _size(item) -> int | None:
    if item.params:
        return int(item.params)
    est = estimate_from_name(item.id)
    return est.total if est else None


def _gguf_only(item) -> bool:
    sibs = item.siblings
    return (sibs is not None and not any(v in sibs for v in VOCAB_FILES)
            and any(str(n).lower().endswith(".gguf") for n in sibs))


def worst_cost(item) -> int:
    """Requests a candidate can cost at most: paths-info, one GET per wanted file or a GGUF header's reads, and
    the tree listing the crawl asks when the siblings show no weights. Siblings can be truncated (HUB-API
    §0.1.11), so what they list never lowers the bound; the rounds spend what the bound left over."""
    return 1 + max(len(WANTED_FILES), GGUF_READS) + (1 if siblings_may_hide_gguf(item) else 0)


def _item_facts(item, families) -> dict:
    """The target's facts from what the Hub said (model_info), as the crawl's writer derives them."""
    bases = base_models_from_tags(item.tags)[0] or []
    return {"repo_id": item.id, "author": item.author or item.id.split("/")[0], "base_models": bases,
            "family": family_of(item.id, bases, families), "params": _size(item)}


def discover_drafts(live, target_id: str, engine: str, budget: int, *, progress: bool | None = None,
                    held: bool = True) -> dict:
    """List, filter, order and fetch candidate drafts for ``target_id`` within ``budget`` requests in all.

    ``held``: the target is in the catalog (its facts are read there); else it is asked (model_info) and
    fetched in the first round with the candidates, so one crawl run and one scoped compute serve both."""
    families = load_families()
    report: dict = {"budget": budget, "looked_in": [], "candidates": 0, "skipped": {}, "discovered": []}
    lines = report["discovery_lines"] = []
    pending = []
    if held:
        target = _target_facts(live.db, target_id)
    else:
        pending = live.lookup([target_id])
        item = live.items.get(live.fetch.ids.get(target_id, target_id))
        target = _item_facts(item, families) if item is not None else None
    if target is None:
        lines.append("no candidate drafts looked for: the Hub did not give the target")
        return report
    skipped = report["skipped"]

    def skip(why: str, n: int = 1) -> None:
        skipped[why] = skipped.get(why, 0) + n

    found: dict[str, tuple[Listed, str]] = {}
    for label, kwargs in _sources(target, families):
        if budget - live.requests() < MIN_FOR_LISTING:
            skip("listings not asked (budget)")
            continue
        try:
            items = list(live.client.list_models(limit=LISTING_LIMIT, sort="downloads", **kwargs))
        except Exception as e:  # noqa: BLE001 - one failed listing must not end the answer

            lines.append(f"listing {label} failed: {describe(e)}")
            continue
        report["looked_in"].append({"where": label, "listed": len(items)})
        for item in items:
            found.setdefault(item.id, (item, label))
    found.pop(target["repo_id"], None)
    in_catalog = _held(live.db, found)
    ranks_gguf = registry.ENGINES[engine].gguf_classes  # only GGUF-signature classes hold GGUF-only repos
    keep = []
    for rid, (item, _label) in found.items():
        size = _size(item)
        if rid in in_catalog:
            skip("already in the catalog")
        elif item.private:
            skip("private")
        elif item.disabled:
            skip("disabled")
        elif size is not None and target["params"] and size >= target["params"]:
            skip("not smaller than the target")
        elif _gguf_only(item) and not ranks_gguf:
            skip(f"GGUF-only (no {registry.ENGINE_NAMES[engine]} class)")
        else:
            keep.append((item, size))
    report["candidates"] = len(found)

    def order(pair):
        item, size = pair
        ratio = size / target["params"] if size and target["params"] else None
        inside = ratio is not None and RATIO_LOW <= ratio <= RATIO_HIGH
        return (not inside, ratio is None, -(item.downloads or 0), item.id)

    keep.sort(key=order)
    todo = [item for item, _ in keep]
    bar = _bar(len(todo), progress)
    rounds = 0 if report["looked_in"] else 1  # a round records that the catalog has looked: only if it did
    try:
        while todo or pending or not rounds:
            left = budget - live.requests() - sum(worst_cost(i) for i in pending)  # the target's fetch first
            batch, cost = [], 0
            for item in todo:
                c = worst_cost(item)
                if cost + c <= left:
                    batch.append(item)
                    cost += c
            if not batch and not pending and rounds:
                break
            rounds += 1
            todo = [i for i in todo if i not in batch]
            before = set(live.fetch.written)
            live.crawl(pending + batch, progress=bar, drafts_for=target["repo_id"])
            report["discovered"] += [i.id for i in batch if i.id in live.fetch.written and i.id not in before]
            pending = []
    finally:
        if bar is not None:
            bar.close()
    if todo:
        skip("over the request budget", len(todo))
    new = report["discovered"]
    live.compute()
    where = ", ".join(f"{s['where']} ({s['listed']})" for s in report["looked_in"]) or "nowhere"
    lines.append(f"looked for drafts in {where}: {report['candidates']} candidate(s), fetched {len(new)}")
    if skipped:
        lines.append("skipped: " + ", ".join(f"{n} {why}" for why, n in skipped.items()))
    lines.append(f"{live.requests()} of {budget} requests spent")
    return report


def _bar(total: int, progress: bool | None):
    show = sys.stderr.isatty() if progress is None else progress
    if not show or not total:
        return None

    return tqdm(total=total, unit="repo", desc="candidate drafts", file=sys.stderr, dynamic_ncols=True)
