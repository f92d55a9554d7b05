"""End to end: the regression gate fails on a slowdown planted in a copy of the engine.

Two copies of minitorch/ go to a temporary folder; the target's Tensor.backward sleeps four
times as long as the real backward took (backward is about half of a training step, so the step
becomes about 3x slower, whatever the load: on a heavily shared machine a step's time varies by
tens of percent from sample to sample). One BLAS thread, so a busy second core does not make
every step erratic. `python -m benchmarks.gate --trees` must exit 1 and name the regression.
The load and interval checks are relaxed here (--max-load, --max-ci) because this test is
about the gate's decision on a planted change, not about this machine being quiet; the benign
and 20 % cases of the decision rule itself are in test_stats.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLANT = '''

import time as _time

_backward = Tensor.backward


def _slow_backward(self, *args, **kwargs):  # planted by benchmarks/tests/test_gate.py
    t0 = _time.perf_counter()
    out = _backward(self, *args, **kwargs)
    _time.sleep(4 * (_time.perf_counter() - t0))  # backward takes 5x as long, however busy
    return out


Tensor.backward = _slow_backward
'''


def copy_engine(dest: Path, plant: bool) -> Path:
    shutil.copytree(ROOT / "minitorch", dest / "minitorch",
                    ignore=shutil.ignore_patterns("__pycache__"))
    if plant:
        init = dest / "minitorch" / "__init__.py"
        init.write_text(init.read_text() + PLANT)
    return dest


def test_gate_fails_on_a_slowdown_planted_in_a_copy_of_the_engine(tmp_path):
    base = copy_engine(tmp_path / "base", plant=False)
    target = copy_engine(tmp_path / "target", plant=True)
    cmd = [sys.executable, "-m", "benchmarks.gate", "--trees", str(base), str(target),
           "--presets", "seed", "--dtypes", "float32", "--rounds", "6", "--target-s", "0.05",
           "--max-load", "99", "--max-ci", "1", "--no-write"]
    env = {**os.environ, "MINITORCH_BENCH_THREADS": "1"}
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "REGRESSION" in out.stderr and "slower" in out.stdout
