"""Nothing private in what is published (catalog/published.py): no private repo id in any table of a published
catalog (scopes and run errors included), and no token list that only a gated repo has."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tarfile

import pytest
from click.testing import CliRunner

from indexer.catalog.published import UNNAMED, redact
from indexer.cli import cli
from indexer.hubsim import HubServer
from indexer.hubsim.repos import HUB_META_FILE
from indexer.jobs.demo import DEMO_TARGET, build_demo_hub

DRAFT = "lumen-ai/Lumen-0.5B-Instruct"
PRIVATE_TARGET = "secret-lab/Secret-7B-Instruct"
PRIVATE_DRAFT = "secret-lab/Secret-0.5B-Instruct"
GATED = "vault-co/Vault-1B"  # gated, granted to TOKEN, with a vocabulary of its own
TOKEN = "hf_published_test_token"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The demo hub plus two private copies and a gated repo whose vocabulary no public repo has."""
    root = tmp_path_factory.mktemp("published-hub")
    build_demo_hub(root)
    meta = json.loads((root / HUB_META_FILE).read_text())
    for src, dst in ((DEMO_TARGET, PRIVATE_TARGET), (DRAFT, PRIVATE_DRAFT), (DRAFT, GATED)):
        shutil.copytree(root / src, root / dst)
        cfg = json.loads((root / dst / "config.json").read_text())
        cfg["_name_or_path"] = dst
        (root / dst / "config.json").write_text(json.dumps(cfg))
        meta[dst] = {**meta[src], "private": True}
    meta[GATED] = {**meta[DRAFT], "gated": "manual", "gated_access": [TOKEN]}
    tj = json.loads((root / GATED / "tokenizer.json").read_text())
    vocab = tj["model"]["vocab"]
    a, b = sorted(vocab)[:2]
    vocab[a], vocab[b] = vocab[b], vocab[a]
    (root / GATED / "tokenizer.json").write_text(json.dumps(tj))
    (root / HUB_META_FILE).write_text(json.dumps(meta))
    with HubServer(str(root)) as server:
        server.root = root
        yield server


def run(*args, ok=(0,)):
    res = CliRunner().invoke(cli, [str(a) for a in args])
    assert res.exit_code in ok, res.output
    return res


def old_run(con, scope: str, errors: list) -> None:
    """A crawl_runs row as an older indexer wrote it (naming what it was asked for)."""
    con.execute("INSERT INTO crawl_runs (started_at, status, scope, errors, listed, unchanged, new, changed, failed, "
                "unresolved, api_calls, resolver_calls, bytes_downloaded, rate_limited) "
                "VALUES (datetime('now'), 'ok', ?, ?, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)", (scope, json.dumps(errors)))
    con.commit()


def texts(db) -> str:
    """Every text (and blob, decoded) of every column of every table, one string."""
    con = sqlite3.connect(db)
    try:
        out = []
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in con.execute(f'SELECT * FROM "{table}"'):
                out += [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in row if
                        isinstance(v, (str, bytes))]
        return "\n".join(out)
    finally:
        con.close()


def test_a_published_catalog_names_no_private_repo_and_holds_no_gated_token_list(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("INDEXER_FAMILIES", str(hub.root / "families.toml"))
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    db = tmp_path / "cat" / "catalog.db"
    db.parent.mkdir()
    run("crawl", "--db", db, "--endpoint", hub.endpoint, "--model", PRIVATE_DRAFT, "--model", DRAFT,
        "--model", GATED, "--model", DEMO_TARGET)
    run("compute", "--db", db)
    run("query", "--db", db, "--target", PRIVATE_TARGET, "--live", "--json", ok=(0, 1, 3))
    run("check", "--db", db, DEMO_TARGET, PRIVATE_DRAFT, ok=(0, 1))
    seen = [PRIVATE_TARGET, PRIVATE_DRAFT]  # every private id the crawl and the live answers saw
    con = sqlite3.connect(db)
    try:
        scopes = [r[0] for r in con.execute("SELECT scope FROM crawl_runs ORDER BY id")]
        assert scopes[0] == f"model={DRAFT} model={GATED} model={DEMO_TARGET} model=(1 unnamed)"
        assert len(scopes) >= 2 and not [s for s in scopes for p in seen if p in s]  # nor the live discovery's
        assert not [p for p in seen if p in texts(db)]  # the crawl stored none of them anywhere
        status, gated = con.execute("SELECT status, gated FROM repos WHERE repo_id = ?", (GATED,)).fetchone()
        assert status == "ok" and gated == "manual"  # downloaded with the granted token
        gated_sha = con.execute("SELECT t.vocab_sha256 FROM repos r JOIN tokenizers t ON t.id = r.tokenizer_id "
                                "WHERE r.repo_id = ?", (GATED,)).fetchone()[0]
        # an older catalog, or another path, that named one: publish strips it all the same
        old_run(con, f"live drafts-for={PRIVATE_TARGET} model={DRAFT}",
                [{"repo": PRIVATE_DRAFT, "reason": f"model_info failed for {PRIVATE_DRAFT}"},
                 {"repo": DRAFT, "reason": "kept"}, {"repo": None, "reason": "run failed"}])
    finally:
        con.close()
    assert any(p in texts(db) for p in seen)
    assert (db.parent / "tokens").is_dir() and list((db.parent / "tokens").glob(f"*/{gated_sha}.json.z"))

    site = tmp_path / "site"
    run("publish", "--db", db, site, "--with-tokens")
    published = texts(site / "catalog.db")
    raw = (site / "catalog.db").read_bytes()
    for private in seen:
        assert private not in published and private.encode() not in raw  # not in a table, nor in a free page
    assert GATED in published and gated_sha in published  # its row, fingerprint and facts are public
    assert f"drafts-for={UNNAMED} model={DRAFT}" in published and "run failed" in published
    shipped = {p.name.split(".")[0] for p in (site / "tokens").glob("*/*.z")}
    assert shipped and gated_sha not in shipped  # its token list and counts are not

    from indexer.jobs.hubpublish import build

    out = tmp_path / "hubout"
    out.mkdir()
    manifest = build(str(db), out)
    snapshot = (out / "catalog.sqlite").read_bytes()
    with tarfile.open(out / "tokens.tar") as tar:
        names = {m.name.rsplit("/", 1)[-1].split(".")[0] for m in tar}
    assert names == shipped and manifest["tokens"]["files"] == len(list((site / "tokens").glob("*/*.z")))
    for private in seen:
        assert private.encode() not in snapshot and private not in texts(out / "catalog.sqlite")


def test_redact_keeps_what_the_catalog_holds(tmp_path):
    from indexer.catalog.db import upgrade

    db = tmp_path / "c.db"
    upgrade(str(db))
    con = sqlite3.connect(db)
    try:
        con.execute("INSERT INTO repos (repo_id, status, disabled) VALUES ('a/held', 'ok', 0)")
        old_run(con, "family=Lumen model=a/held model=b/other model=(2 unnamed) live drafts-for=a/held", [])
        assert redact(con) == {"scopes": 1, "errors": 0}
        assert con.execute("SELECT scope FROM crawl_runs").fetchone()[0] == (
            f"family=Lumen model=a/held model={UNNAMED} model=(2 unnamed) live drafts-for=a/held")
        assert redact(con) == {"scopes": 0, "errors": 0}
    finally:
        con.close()


def test_a_private_repo_leaves_no_count_or_date_in_a_scope(hub, tmp_path, monkeypatch):
    """An author scope listed with a token holds only private repos: the run lists none of them and the scope's
    high-water mark (published in scope_cursors) takes no private repo's last change."""
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    db = tmp_path / "catalog.db"
    run("crawl", "--db", db, "--endpoint", hub.endpoint, "--author", "secret-lab")
    con = sqlite3.connect(db)
    try:
        assert con.execute("SELECT listed FROM crawl_runs").fetchall() == [(0,)]
        assert con.execute("SELECT high_water FROM scope_cursors WHERE scope LIKE '%secret-lab%'").fetchall() in (
            [], [(None,)])
        assert not con.execute("SELECT 1 FROM repos WHERE repo_id LIKE 'secret-lab/%'").fetchall()
    finally:
        con.close()
