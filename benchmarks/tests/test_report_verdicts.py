"""What the report makes of the suite's JSON: unreliable results greyed with their reason and no
verdict (table, chart, summary card), reliable ones judged; machines side by side; asv history
changes flagged only when significant; scaling exponents that contradict the caption flagged.

The report is built in a subprocess (`python -m reports.build`) from synthetic artifacts, so this
suite does not import reports (reports read JSON only and are never imported by the suites).
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks import measure, peers, stats

ROOT = Path(__file__).resolve().parents[2]


def peer_run(machine: str, load: float, minitorch_ms: float = 24.0) -> dict:
    rng = np.random.default_rng(0)
    samples = {}
    for label, ms in (("minitorch", minitorch_ms), ("torch", 20.0), ("numpy", 23.0)):
        samples[label] = [{"wall": ms * (1 + rng.normal(0, 0.005)) / 1e3, "cpu": ms / 1e3,
                           "load": load, "loads": [load], "kept": load <= stats.MAX_LOAD,
                           "faults": 0} for _ in range(10)]
    out = measure.summarize(samples, "minitorch")
    out.update(first={k: 4.0 for k in samples}, steps_per_sample={k: 1 for k in samples},
               rounds=10)
    row = peers.add_verdicts(peers.to_row(out, "seed", "float32", 32, 64, "tuned"))
    return {"rows": [row], "machine": machine, "threads": 2, "rounds": 10,
            "max_load": stats.MAX_LOAD, "max_ci": stats.MAX_CI,
            "info": {"minitorch": {"machine": machine, "git_sha": "a" * 40, "cores": 2}}}


def asv_results(root: Path) -> None:
    """Two commits on one machine: a benign 2 % change and a planted 20 % slowdown."""
    rng = np.random.default_rng(1)
    (root / "m1").mkdir(parents=True)
    (root / "benchmarks.json").write_text(json.dumps({
        "bench_model.Benign.time_a": {"param_names": [], "type": "time", "unit": "seconds"},
        "bench_model.Planted.time_b": {"param_names": [], "type": "time", "unit": "seconds"}}))
    cols = ["result", "params", "stats_ci_99_a", "stats_ci_99_b", "samples"]
    for i, (commit, benign, planted) in enumerate((("1" * 40, 0.100, 0.100),
                                                   ("2" * 40, 0.102, 0.120))):
        res = {}
        for name, mean in (("bench_model.Benign.time_a", benign),
                           ("bench_model.Planted.time_b", planted)):
            s = list(mean * np.exp(rng.normal(0, 0.02, 10)))
            res[name] = [float(np.median(s)), [], min(s), max(s), s]
        (root / "m1" / f"{commit[:8]}-existing.json").write_text(json.dumps({
            "commit_hash": commit, "date": 1000 + i, "result_columns": cols, "results": res}))


def build(tmp_path: Path, bench: dict, others: dict | None = None) -> str:
    art, asv = tmp_path / "art", tmp_path / "asv"
    art.mkdir()
    (art / "bench.json").write_text(json.dumps(bench))
    for name, payload in (others or {}).items():
        (art / name).write_text(json.dumps(payload))
    asv_results(asv)
    out = subprocess.run([sys.executable, "-m", "reports.build", "--out", str(tmp_path / "out"),
                          "--artifacts", str(art), "--asv-results", str(asv), "--runs"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "out" / "index.html").read_text()
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_report_greys_unreliable_results_and_judges_reliable_ones(tmp_path):
    loaded = peer_run("amd-epyc-f25m17-2c", load=1.8)
    quiet = peer_run("intel-xeon-f6m85-2c", load=0.0, minitorch_ms=32.0)
    text = build(tmp_path, {"peers": loaded, "scaling": {"float32": {
        "dtype": "float32", "base": {"batch": 32}, "rows": [
            {"axis": "seq", "values": [16, 32, 64], "step_ms": [4.0, 8.0, 20.0], "slope": 1.3,
             "attention_core_ms": [0.1, 0.5, 6.0], "rest_ms": [3.9, 7.5, 14.0],
             "attention_slope": 3.6, "rest_slope": 0.9}]}}},
        others={"bench-xeon.json": {"peers": quiet}})
    start = text.index("training step time vs")
    summary = text[start:text.index("Main job and test suites", start)]
    assert "Not measured reliably: load 1.80 cores" in summary and "no verdict" in summary
    assert "meets" not in summary and "misses" not in summary
    assert "no verdict: not measured reliably: load 1.80 cores" in text  # the table
    assert "Grey bars: 1 of 1 configurations not measured reliably" in text  # the chart
    # the other machine's run: its own column, judged (1.6x torch misses the 1.3x target)
    assert "minitorch ÷ peer per machine (2 machines)" in text
    assert "amd-epyc-f25m17-2c" in text and "intel-xeon-f6m85-2c" in text
    # history: the planted 20 % flagged, the benign 2 % not
    assert re.search(r"time_b \S+ ms \(22222222\) 1\.\d\d× slower \(significant\)", text)
    assert re.search(r"time_a \S+ ms \(22222222\) 1\.0\d× no significant change", text)
    # the attention exponent 3.6 contradicts the caption's ~2
    assert "attention slope 3.60 contradicts the caption (expected 1.5–2.5)" in text


def test_report_gives_the_verdict_of_a_reliable_run(tmp_path):
    text = build(tmp_path, {"peers": peer_run("amd-epyc-f25m17-2c", load=0.0)})
    start = text.index("training step time vs")
    summary = text[start:text.index("Main job and test suites", start)]
    assert "not measured reliably" not in summary.lower()
    assert "Target: meets ≤ 1.1× NumPy, meets ≤ 1.3× PyTorch" in summary
    assert "minitorch / PyTorch: 1.20× [" in summary


def test_history_change_rule_matches_the_suites_rule():
    """reports/asv_history.py mirrors stats.change; run it in a subprocess on the same series."""
    rng = np.random.default_rng(3)
    cases = []
    for factor in (1.0, 1.03, 1.08, 1.2, 0.8, 1.5):
        a = list(100 * np.exp(rng.normal(0, 0.03, 8)))
        b = list(100 * factor * np.exp(rng.normal(0, 0.03, 8)))
        cases.append((a, b, stats.change(a, b)["verdict"]))
    code = ("import json, sys; from reports.asv_history import Point, change; "
            "cases = json.load(sys.stdin); print(json.dumps([change("
            "Point('a', 0, 'm', sorted(a)[len(a) // 2] * 0 + __import__('statistics').median(a),"
            " a), Point('b', 0, 'm', __import__('statistics').median(b), b))['verdict'] "
            "for a, b, _ in cases]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, input=json.dumps(cases),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [v for _, _, v in cases]
    assert {v for _, _, v in cases} >= {"same", "slower", "faster"}


def test_history_does_not_judge_single_sample_results():
    """asv -a repeat=1 stores a zero-width interval: a 30 % difference is no evidence."""
    code = ("from reports.asv_history import Point, change; "
            "print(change(Point('a', 0, 'm', 1.0, None, (1.0, 1.0)), "
            "Point('b', 0, 'm', 1.3, None, (1.3, 1.3))), "
            "change(Point('a', 0, 'm', 1.0, None, (0.98, 1.02)), "
            "Point('b', 0, 'm', 1.3, None, (1.25, 1.35)))['verdict'])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.split() == ["None", "slower"], out.stderr
