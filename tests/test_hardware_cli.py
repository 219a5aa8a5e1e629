"""`indexer hardware`: every device --hardware names, with its figures, its source and the engines that run on it."""

from __future__ import annotations

import json

from click.testing import CliRunner

from indexer.cli import cli
from indexer.engines import ENGINES
from indexer.speed.hardware import DEVICES, REFERENCE, lookup


def run(*args):
    res = CliRunner().invoke(cli, ["hardware", *args])
    assert res.exit_code == 0, res.output
    return res.stdout


def engines_on(kind: str) -> list[str]:
    return [n for n, e in ENGINES.items() if e.speed is not None and kind in e.speed.devices]


def test_json_lists_every_device_with_its_figures_and_engines():
    got = json.loads(run("--json"))
    assert [d["name"] for d in got["devices"]] == [d.name for d in DEVICES]
    for shown, d in zip(got["devices"], DEVICES):
        assert (shown["kind"], shown["bandwidth_gbps"], shown["tflops_fp32"], shown["memory_gb"], shown["source"]) \
            == (d.kind, d.bandwidth_gbps, d.tflops, d.memory_gb, d.source)
        assert shown["engines"] == engines_on(d.kind) and shown["reference"] == (d.name in REFERENCE)
        assert shown["source"]  # every figure says where it comes from
    assert got["engines_by_kind"]["apple"] == engines_on("apple") and "mlx" in got["engines_by_kind"]["apple"]
    assert "sglang" in got["engines_by_kind"]["nvidia"] and "sglang" not in got["engines_by_kind"]["apple"]
    assert got["no_speed_model"] == [n for n, e in ENGINES.items() if e.speed is None]
    assert got["reference"] == list(REFERENCE)


def test_every_listed_name_round_trips_through_lookup():
    got = json.loads(run("--json"))
    for shown in got["devices"]:
        for name in (shown["name"], shown["name"].lower(), shown["name"].upper(), *shown["aliases"]):
            assert lookup(name).name == shown["name"], name


def test_text_is_one_row_per_device_then_the_engines_per_kind():
    text = run()
    lines = text.splitlines()
    assert lines[0].split() == ["device", "kind", "GB/s", "FP32", "TFLOPS", "memory", "source"]
    rows = lines[1:1 + len(DEVICES)]
    for row, d in zip(rows, DEVICES):
        assert row.startswith(d.name + (" *" if d.name in REFERENCE else " ")), row
        assert f" {d.kind} " in row and f" {d.bandwidth_gbps:g} " in row and f" {d.tflops:g} " in row
        assert row.endswith(d.source)
        assert (f" {d.memory_gb:g} GB " in row) if d.memory_gb is not None else " - " in row
    tail = "\n".join(lines[1 + len(DEVICES):])
    for kind in {d.kind for d in DEVICES}:
        assert f"  {kind:7} {', '.join(engines_on(kind))}" in tail, kind
    assert "--bandwidth" in tail and ", ".join(REFERENCE) in tail


def test_json_flag_only():
    res = CliRunner().invoke(cli, ["hardware", "--apple"])
    assert res.exit_code == 2 and "No such option" in res.output
