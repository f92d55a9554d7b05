"""The measurement harness under synthetic load, and the verdict rule on synthetic series.

The coordinator runs with scripted workers whose samples carry the outside load the LoadMeter
would have read: a busy machine's samples are retried, then dropped, and get no verdict; a
loaded sample whose retry is quiet is kept. The quiet and loaded cases of the verdict rule are
synthetic series fed to the same summary, so no test depends on how busy this machine is
(the meter's own arithmetic is tested in test_machine.py on injected readings).
"""

from __future__ import annotations

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


class ScriptedWorker:
    """Stands in for measure.Worker: replies as a worker process would, each sample's outside
    load taken in turn from LOADS[label] (what the worker's LoadMeter would have read)."""

    LOADS: dict[str, list[float]] = {}
    ASKED: dict[str, int] = {}  # samples asked for, retries included

    def __init__(self, job: measure.Job):
        self.job, self.loads, self.samples = job, iter(self.LOADS[job.label]), 0
        self.ASKED[job.label] = 0

    def ask(self, **req) -> dict:
        if "setup" in req:
            return {"first": 4.0}
        if "calibrate" in req:
            return {"steps": 3}
        self.samples += 1
        self.ASKED[self.job.label] += 1
        wall = 0.02 * (1 + 0.01 * (self.samples % 3))  # a small deterministic jitter
        return {"wall": wall, "cpu": wall, "load": next(self.loads), "result": 4.0, "faults": 0}

    def close(self) -> None:
        pass


def scripted(monkeypatch, **loads: list[float]) -> dict:
    monkeypatch.setattr(measure, "Worker", ScriptedWorker)
    monkeypatch.setattr(ScriptedWorker, "LOADS", loads)
    monkeypatch.setattr(ScriptedWorker, "ASKED", {})
    jobs = [measure.Job(k, SPIN) for k in loads]
    return measure.measure(jobs, rounds=6, baseline="a", retries=1, pause=0, gap=0)


def test_busy_machine_every_sample_retried_then_dropped_and_no_verdict(monkeypatch):
    out = scripted(monkeypatch, a=[1.9] * 12, b=[1.8] * 12)
    assert out["load"] > stats.MAX_LOAD and not out["reliable"]
    ratio = out["ratios"]["b"]
    assert not ratio["reliability"]["reliable"]
    assert "dropped for outside load" in ratio["reliability"]["reason"]
    est = stats.Estimate(ratio["wall"]["median"], ratio["wall"]["lo"], ratio["wall"]["hi"], 6)
    assert stats.target_verdict(est, 10.0, ratio["reliability"]) is None
    # every round's sample is accounted for (dropped, not silently lost); after two rounds of
    # nothing but loaded samples the harness stops retrying: 2 rounds x 2 attempts, then 1
    for k in ("a", "b"):
        assert out["times"][k]["samples_ms"] == [None] * 6
        assert len(out["times"][k]["loads"]) == 6
    assert ScriptedWorker.ASKED == {"a": 2 * 2 + 4, "b": 2 * 2 + 4}


def test_a_loaded_sample_is_retried_and_the_quiet_retry_kept(monkeypatch):
    out = scripted(monkeypatch, a=[0.0, 1.5, 0.1, 0.0, 0.0, 0.0, 0.0],
                   b=[0.0, 0.0, 0.0, 0.0, 0.0, 0.9, 0.0])
    assert ScriptedWorker.ASKED == {"a": 7, "b": 7}  # one retry each
    assert out["reliable"], out["ratios"]["b"]["reliability"]
    assert out["times"]["a"]["loads"][1] == 0.1  # the kept retry's reading
    assert out["times"]["a"]["samples_ms"].count(None) == 0  # the retry replaced the sample
    assert out["ratios"]["b"]["wall"]["median"] == pytest.approx(1.0, abs=0.02)
