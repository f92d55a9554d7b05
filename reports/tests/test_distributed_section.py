"""The Distributed section: step times, efficiency and the cost model from mpi.json, shown
after Reliability's place when the file exists, and no section at all without it."""

from __future__ import annotations

import json

from benchmarks.mpi_scaling import cost_model
from reports.build import build_report
from reports.tests.fixtures import write_fixture_artifacts
from reports.tests.test_report_build import SECTIONS, Page

ROW = {"preset": "seed", "dtype": "float32", "params": 161985, "param_bytes": 647940,
       "step_ms": {"1": 40.0, "2": 25.0}, "speedup_2": 1.6, "efficiency_2": 0.8,
       "allreduce_in_step_ms_2": 1.0, "lone_allreduce_ms_2": 0.5,
       "effective_bandwidth_gbit": 10.4, "model_step_ms_2": 20.5,
       "measured_over_model_2": 1.22, "cost_model": cost_model(0.040, 647940)}


def _build(tmp_path, monkeypatch, payload):
    dirs = write_fixture_artifacts(tmp_path)
    if payload is not None:
        (dirs["artifacts"] / "mpi.json").write_text(json.dumps(payload))
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    return build_report(tmp_path / "out", dirs["artifacts"], None, dirs["asv_results"]
                        ).read_text()


def test_distributed_section_tables(tmp_path, monkeypatch):
    html = _build(tmp_path, monkeypatch, {
        "machine": {"cpu": "AMD EPYC", "cores": 2}, "global_batch": 32, "block_size": 64,
        "rounds": 2, "steps": 20, "bandwidths_gbit": [1, 10, 100], "results": [ROW]})
    page = Page(html)
    assert list(page.sections) == [*SECTIONS[:-1], "distributed", SECTIONS[-1]]
    assert page.sections["distributed"]["tables"] == 2
    assert page.sections["distributed"]["error"] == 0
    section = html.split('id="distributed"')[1]
    assert "AMD EPYC" in section and ">0.80<" in section.replace(" ", "")
    assert "N at 10 Gb/s" in section


def test_distributed_section_absent_without_mpi_json(tmp_path, monkeypatch):
    assert "distributed" not in Page(_build(tmp_path, monkeypatch, None)).sections


def test_cost_model_threshold_matches_closed_form():
    """Communication dominates from the smallest N > 1 + t1 b / (16 P)."""
    t1, P = 0.040, 647940
    for gbit, entry in cost_model(t1, P).items():
        b = float(gbit.removesuffix("Gbit")) * 1e9
        n = entry["comm_dominates_from_ranks"]
        bound = 1 + t1 * b / (16 * P)
        assert n is None and bound >= 1023 or n - 1 <= bound < n
