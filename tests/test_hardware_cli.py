"""`indexer hardware`: every device --hardware names, with its figures, its source and the engines that run on it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from indexer.cli import cli
from indexer.engines import ENGINES
from indexer.speed.hardware import DEVICES, KINDS, REFERENCE, ambiguity, listed, lookup


def run(*args):
    res = CliRunner().invoke(cli, ["hardware", *args])
    assert res.exit_code == 0, res.output
    return res.stdout


def engines_on(kind: str) -> list[str]:
    return [n for n, e in ENGINES.items() if kind in e.device_kinds(None)]


def test_json_lists_every_device_with_its_figures_and_engines():
    got = json.loads(run("--json"))
    assert [d["name"] for d in got["devices"]] == [d.name for d in listed()]
    assert sorted(d.name for d in DEVICES) == sorted(d["name"] for d in got["devices"])
    for shown, d in zip(got["devices"], listed()):
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
    for row, d in zip(rows, listed()):
        assert row.startswith(d.name + (" *" if d.name in REFERENCE else " ")), row
        assert f" {d.kind} " in row and f" {d.bandwidth_gbps:g} " in row and f" {d.tflops:g} " in row
        assert row.endswith(d.source)
        assert (f" {d.memory_gb:g} GB " in row) if d.memory_gb is not None else " - " in row
    tail = "\n".join(lines[1 + len(DEVICES):])
    for kind in {d.kind for d in DEVICES}:
        shown = [f"{n} (GGUF files only)" if kind not in ENGINES[n].device_kinds(False) else n
                 for n in engines_on(kind)]
        assert f"  {kind:7} {', '.join(shown)}" in tail, kind
    assert "--bandwidth" in tail and ", ".join(REFERENCE) in tail


def test_json_flag_only():
    res = CliRunner().invoke(cli, ["hardware", "--apple"])
    assert res.exit_code == 2 and "No such option" in res.output


def test_devices_are_sorted_by_kind_then_bandwidth():
    got = json.loads(run("--json"))["devices"]
    keys = [(KINDS.index(d["kind"]), d["bandwidth_gbps"]) for d in got]
    assert keys == sorted(keys) and got[0]["kind"] == "apple" and got[-1]["kind"] == "cpu"


def test_lm_studio_runs_gguf_everywhere_and_mlx_on_apple_only():
    got = json.loads(run("--json"))
    for kind in KINDS:  # its llama.cpp engine runs GGUF files on every kind of device
        assert "lmstudio" in got["engines_by_kind"][kind], kind
        assert ("lmstudio" in got["gguf_only"][kind]) == (kind != "apple"), kind
    assert "lmstudio-ai/mlx-engine" in got["sources"]["lmstudio"]
    assert "(GGUF files only)" in run() and "lmstudio (GGUF files only)" not in run().split("apple ")[-1][:80]


def test_vendor_data_sheets_for_h100_and_rx_9070_xt():
    assert "nvidia-tensor-core-gpu-datasheet" in lookup("H100 SXM").source
    assert "amd.com/en/products/graphics/desktops/radeon/9000-series" in lookup("RX 9070 XT").source


@pytest.mark.parametrize("typed, meant", [("rtx4090", "RTX 4090"), ("RTX-4090", "RTX 4090"), ("m4max", "M4 Max"),
                                          ("M4-MAX", "M4 Max"), ("geforce rtx4090", "RTX 4090"),
                                          ("h100sxm", "H100 SXM"), ("rx9070xt", "RX 9070 XT")])
def test_hardware_names_are_matched_by_a_normalised_key(typed, meant):
    assert lookup(typed).name == meant


def test_an_ambiguous_name_says_which_device_it_took():
    assert ambiguity("H100") == "H100 SXM (also: H100 PCIe)"
    assert ambiguity("H100 SXM") is None and ambiguity("rtx4090") is None
