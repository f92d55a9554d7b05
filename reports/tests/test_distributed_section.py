"""The Distributed section: step times, efficiency and the cost model from mpi.json, shown
after Reliability's place when the file exists, and no section at all without it."""

from __future__ import annotations

from reports.tests.fixtures import build_page
from reports.tests.test_report_build import SECTIONS, Page

ROW = {"preset": "seed", "dtype": "float32", "params": 161985, "param_bytes": 647940,
       "step_ms": {"1": 40.0, "2": 25.0}, "speedup_2": 1.6, "efficiency_2": 0.8,
       "allreduce_in_step_ms_2": 1.0, "lone_allreduce_ms_2": 0.5,
       "effective_bandwidth_gbit": 10.4, "model_step_ms_2": 20.5,
       "measured_over_model_2": 1.22,
       "cost_model": {"1Gbit": {"comm_dominates_from_ranks": 5},
                      "10Gbit": {"comm_dominates_from_ranks": 40},
                      "100Gbit": {"comm_dominates_from_ranks": None}}}


def _build(tmp_path, monkeypatch, payload):
    return build_page(tmp_path, monkeypatch, {"mpi.json": payload})


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
    assert "N at 10 Gb/s" in section and "&gt; 1024" in section


def test_distributed_section_absent_without_mpi_json(tmp_path, monkeypatch):
    assert "distributed" not in Page(_build(tmp_path, monkeypatch, None)).sections

