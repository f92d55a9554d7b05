"""The Performance section's tables from benchmarks/whole_machine.py and
benchmarks/matmul_floor.py: every configuration with its interval, the fastest-vs-fastest
ratio with its verdict (or why there is none), and step / matmuls with the target."""

from __future__ import annotations

from reports.tests.fixtures import build_page

INFO = {"machine": "amd-epyc-2c"}
WHOLE = {"rows": [{
    "preset": "seed", "dtype": "float64", "target": 0.8,
    "ms": {"minitorch 2 threads + replay": 49.3, "torch eager, 2 threads": 66.4},
    "ms_ci": {"minitorch 2 threads + replay": [45.4, 51.2], "torch eager, 2 threads": [52.3, 98.3]},
    "reliability": {"minitorch 2 threads + replay": {"reliable": True},
                    "torch eager, 2 threads": {"reliable": False}},
    "fastest_minitorch": "minitorch 2 threads + replay", "fastest_torch": "torch eager, 2 threads",
    "ratio": 0.73, "ratio_ci": [0.58, 0.77], "verdict": None}], "info": INFO}
FLOOR = {"rows": [{"preset": "seed", "dtype": "float32", "target": 1.5,
                   "ms": {"matmuls": 17.5, "matmuls threaded": 15.0, "eager": 31.6,
                          "2 threads + replay": 24.8, "matmuls as ranks": 14.25,
                          "MPI 2 ranks + replay": 20.6},
                   "step_over_matmuls": {"eager": 1.806, "2 threads + replay": 1.653,
                                         "MPI 2 ranks + replay": 1.446}}],
         "info": INFO}


def test_whole_machine_and_matmul_floor_tables(tmp_path, monkeypatch):
    html = build_page(tmp_path, monkeypatch, {"bench.json": {"whole_machine": WHOLE,
                                                             "matmul_floor": FLOOR}})
    whole = html.split("The whole machine: each library")[1].split("</table>")[0]
    assert "amd-epyc-2c" in html
    assert "[45.4, 51.2]" in whole and "minitorch 2 threads + replay" in whole
    assert "no verdict: not measured reliably" in whole  # torch's sample was unreliable
    floor = html.split("Step time over the time of its own matmuls")[1].split("</table>")[0]
    assert "1.653" in floor or "1.65" in floor
    assert floor.count("misses") == 2  # 1.81x and 1.65x are both above 1.5x
    mpi = floor.split("MPI 2 ranks + replay")[1].split("</tr>")[0]
    assert "14.2" in mpi and "meets" in mpi  # against the ranks' own matmuls, not the threads'
