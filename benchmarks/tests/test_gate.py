"""End to end: the regression gate fails on a slowdown planted in a copy of the engine, and passes
a change below its threshold.

Two copies of minitorch/ go to a temporary folder. Each copy's import installs a fake clock in
the harness worker that loads it (time.perf_counter, which the worker times its samples with):
the clock stands still except that every Tensor.backward advances it by a fixed step, 50 ms in
the base copy and 50 ms x FACTOR in the target. So every sample's time is exact, whatever the
load: the test is about the gate's decision on a planted change (workers, worktrees of two
trees, interleaved rounds, the verdict and the exit code), not about this machine being quiet
(the load check is off, --max-load inf, since a fake clock makes the load reading meaningless).
The decision rule itself on synthetic series is in test_stats.py. `python -m benchmarks.gate
--trees` must exit 1 and name the regression at 3x, and exit 0 at 1.05x (under 10 %).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLANT = '''

import time as _time

_clock = [0.0]
_time.perf_counter = lambda: _clock[0]  # planted by benchmarks/tests/test_gate.py: a fake clock
_backward = Tensor.backward


def _clocked_backward(self, *args, **kwargs):
    out = _backward(self, *args, **kwargs)
    _clock[0] += {step_s!r}  # each backward "takes" this long
    return out


Tensor.backward = _clocked_backward
'''


def copy_engine(dest: Path, step_s: float) -> Path:
    shutil.copytree(ROOT / "minitorch", dest / "minitorch",
                    ignore=shutil.ignore_patterns("__pycache__"))
    init = dest / "minitorch" / "__init__.py"
    init.write_text(init.read_text() + PLANT.format(step_s=step_s))
    return dest


@pytest.mark.parametrize("factor,code,verdict", [(3.0, 1, "slower"), (1.05, 0, "same")])
def test_gate_judges_a_slowdown_planted_in_a_copy_of_the_engine(tmp_path, factor, code, verdict):
    base = copy_engine(tmp_path / "base", 0.05)
    target = copy_engine(tmp_path / "target", 0.05 * factor)
    cmd = [sys.executable, "-m", "benchmarks.gate", "--trees", str(base), str(target),
           "--presets", "seed", "--dtypes", "float32", "--rounds", "6", "--target-s", "0.05",
           "--max-load", "inf", "--no-write"]
    env = {**os.environ, "MINITORCH_BENCH_THREADS": "1"}
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == code, out.stdout + out.stderr
    (row,) = [ln for ln in out.stdout.splitlines() if ln.startswith("seed ")]
    # one step per sample (50 ms of fake time each): base 50.00 ms, target 50 ms x factor
    assert f"base    50.00 ms  target {50 * factor:8.2f} ms  target/base {factor:.3f}" in row, row
    assert row.endswith(verdict), row
    assert ("REGRESSION" in out.stderr) == (code == 1), out.stderr
