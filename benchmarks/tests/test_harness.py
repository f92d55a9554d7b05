"""The measurement harness under synthetic load, and the verdict rule on synthetic series.

The busy-loop test starts its own CPU hogs, one per core, and checks that the harness notices
(outside load from /proc/stat), drops the samples and refuses a verdict. The quiet case is a
synthetic series fed to the same summary, so no test depends on how busy this machine is.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from benchmarks import measure, peers, stats

SPIN = "benchmarks.tests.workloads:spin"


def synthetic(labels_ms: dict[str, float], rounds: int = 10, load: float = 0.0,
              jitter: float = 0.01) -> dict[str, list[dict]]:
    """Per-round samples as the workers report them, with a deterministic small jitter."""
    out = {}
    for j, (label, ms) in enumerate(labels_ms.items()):
        out[label] = []
        for r in range(rounds):
            t = ms * (1 + jitter * (((r * 7 + j * 3) % 5) - 2) / 2) / 1e3
            out[label].append({"wall": t, "cpu": t, "load": load, "loads": [load],
                               "kept": load <= stats.MAX_LOAD, "faults": 0})
    return out


def row_of(samples: dict, preset: str = "seed", dtype: str = "float32") -> dict:
    out = measure.summarize(samples, "minitorch")
    out.update(first={k: 4.0 for k in samples}, steps_per_sample={k: 1 for k in samples},
               rounds=len(samples["minitorch"]))
    return peers.add_verdicts(peers.to_row(out, preset, dtype, 32, 64, "default"))


def test_quiet_synthetic_series_gets_a_verdict():
    row = row_of(synthetic({"minitorch": 24.0, "torch": 20.0, "numpy": 23.0}))
    assert row["reliable"] and row["unreliable"] == ""
    assert row["ratio_vs_torch"] == pytest.approx(1.2, rel=0.02)
    assert row["verdict"] == {"numpy": "meets", "torch": "meets"}  # targets 1.1x and 1.3x
    slow = row_of(synthetic({"minitorch": 30.0, "torch": 20.0, "numpy": 23.0}))
    assert slow["reliable"] and slow["verdict"]["torch"] == "misses"


def test_loaded_synthetic_series_gets_no_verdict():
    row = row_of(synthetic({"minitorch": 24.0, "torch": 20.0, "numpy": 23.0}, load=1.8))
    assert not row["reliable"]
    assert row["verdict"] == {"numpy": None, "torch": None}
    assert row["unreliable"].startswith("not measured reliably: load 1.80 cores")
    assert row["ms_per_step"]["minitorch"] == pytest.approx(24.0, rel=0.02)  # still shown


def test_harness_under_busy_loops_flags_the_result_and_gives_no_verdict():
    cores = os.cpu_count() or 1
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]
    try:
        time.sleep(0.3)
        jobs = [measure.Job("a", SPIN, [20_000]), measure.Job("b", SPIN, [20_000])]
        out = measure.measure(jobs, rounds=6, baseline="a", target_s=0.02, retries=1, pause=0,
                              gap=0)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert out["load"] is not None and out["load"] > stats.MAX_LOAD, out["load"]
    assert not out["reliable"]
    ratio = out["ratios"]["b"]
    assert not ratio["reliability"]["reliable"]
    assert "dropped for outside load" in ratio["reliability"]["reason"]
    est = stats.Estimate(ratio["wall"]["median"], ratio["wall"]["lo"], ratio["wall"]["hi"], 6)
    assert stats.target_verdict(est, 10.0, ratio["reliability"]) is None
    # every round's sample is accounted for (dropped, not silently lost)
    assert all(len(s) == 6 for s in (out["times"]["a"]["loads"], out["times"]["b"]["loads"]))
    assert out["times"]["a"]["samples_ms"].count(None) >= 4
