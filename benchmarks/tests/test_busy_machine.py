"""The tests that once depended on how busy the machine was pass beside two CPU-burning processes
(issue 35: `make test` failed on a 2-core machine under load 5-7 because a test asserted the
outside load). They now test the logic on injected readings (scripted workers, a fake clock,
counted draws); this runs them in a pytest subprocess with two busy loops beside it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BURNERS = 2  # every core of the development and CI machines
# The files (and tests) that measured load, wall time or cores before; the two kill-and-resume
# tests (verification/test_distributed.py, test_tokens.py) hold the trainer at a planted step
# instead of racing it, and are left out here for their cost (minutes).
SENSITIVE = [
    "benchmarks/tests/test_harness.py", "benchmarks/tests/test_machine.py",
    "benchmarks/tests/test_mpi_step.py", "benchmarks/tests/test_gate.py",
    "verification/test_data_samplers.py::test_random_sampler_endless_is_lazy",
    "verification/test_data_loader_api.py::test_endless_loader_next_of_a_new_iterator",
    "verification/test_data_loader_api.py::test_endless_loader_while_true_over_a_recreated_iterator",
]


@pytest.fixture
def burners():
    """Two processes spinning in pure Python for as long as the test runs."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(BURNERS)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


@pytest.mark.slow
def test_load_sensitive_tests_pass_beside_two_cpu_burners(burners, tmp_path):
    env = {**os.environ, "MINITORCH_ARTIFACTS": str(tmp_path / "artifacts")}  # not the repo's
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          *SENSITIVE], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=1200)
    assert all(p.poll() is None for p in burners), "a burner stopped: the machine was not busy"
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and "failed" not in out.stdout, out.stdout[-2000:]
