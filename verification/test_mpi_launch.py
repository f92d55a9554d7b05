"""`minitorch train --ranks N` and `minitorch run --nproc N` start their ranks through one mpiexec
command (launcher.mpiexec_command): more ranks than cores oversubscribe under Open MPI 4 and 5,
and a signal to the launching process stops the ranks at a step boundary with a checkpoint and
one minitorch line (issue 34: Open MPI 5 ignored the old setting, "not enough slots"; SIGINT to
mpiexec killed the ranks with no message and no checkpoint).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minitorch import cli, launcher
from verification.test_mpi_agree import ARGS, MPIEXEC, ROOT

pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="needs mpiexec (requirements/lock.txt)")
# the test's own environment, without the oversubscribe settings the launcher must add itself
ENV = {**{k: v for k, v in os.environ.items() if "oversubscribe" not in v},
       "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
       "OMPI_MCA_mpi_yield_when_idle": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


@pytest.fixture
def captured(monkeypatch):
    """run_mpiexec replaced: the (command, environment) each launcher would run."""
    calls = []
    monkeypatch.setattr(launcher, "run_mpiexec", lambda cmd, env: calls.append((cmd, env))
                        or (0, None))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    for k in ("OMPI_MCA_rmaps_base_oversubscribe", "PRTE_MCA_rmaps_default_mapping_policy",
              *launcher.BLAS_THREADS):  # a thread count in the environment is the user's choice
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    return calls


def test_both_launchers_oversubscribe_more_ranks_than_cores(captured, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print('hi')\n")
    assert cli.main(["train", "--ranks", "4", *ARGS, "--out", str(tmp_path / "o")]) == 0
    assert cli.main(["run", "--nproc", "4", str(script)]) == 0
    (train_cmd, train_env), (run_cmd, run_env) = captured
    for cmd, env in captured:
        assert Path(cmd[0]).name == "mpiexec" and cmd[1:3] == ["-n", "4"]
        assert env["PRTE_MCA_rmaps_default_mapping_policy"] == ":oversubscribe"  # Open MPI 5
        assert env["OMPI_MCA_rmaps_base_oversubscribe"] == "1"  # Open MPI 4
        assert env["OMP_NUM_THREADS"] == "1"
    assert train_cmd[3:] == [sys.executable, "-m", "minitorch", "train", *ARGS, "--out",
                             str(tmp_path / "o")]
    assert run_cmd[3:] == [sys.executable, "-m", "minitorch", "run", str(script)]


def test_ranks_within_the_cores_do_not_oversubscribe(captured, tmp_path):
    assert cli.main(["train", "--ranks", "2", *ARGS, "--out", str(tmp_path / "o")]) == 0
    assert "PRTE_MCA_rmaps_default_mapping_policy" not in captured[0][1]


@pytest.mark.slow
def test_run_with_more_ranks_than_cores_really_starts(tmp_path):
    script = tmp_path / "rank.py"
    script.write_text("import os\nprint('rank', os.environ['RANK'], 'of', "
                      "os.environ['WORLD_SIZE'])\n")
    n = (os.cpu_count() or 1) + 1
    proc = subprocess.run([sys.executable, "-m", "minitorch", "run", "--nproc", str(n),
                           str(script)], capture_output=True, text=True, env=ENV,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(proc.stdout.split("\n")[:-1]) == [f"rank {i} of {n}" for i in range(n)]


@pytest.mark.slow
def test_sigint_to_train_ranks_stops_them_with_a_checkpoint(tmp_path):
    out = tmp_path / "run"
    argv = [a if a != "4" or ARGS[i - 1] != "--iters" else "100000" for i, a in enumerate(ARGS)]
    argv += ["--eval_interval", "100000"]
    proc = subprocess.Popen([sys.executable, "-m", "minitorch", "train", "--ranks", "2", *argv,
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=ENV)
    deadline = time.monotonic() + 180
    while not (out / "metrics.jsonl").exists() or "step" not in (out / "metrics.jsonl").read_text():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    time.sleep(2)  # a few steps in
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    last = err.strip().split("\n")[-1]
    assert last.startswith("minitorch train: stopped by SIGINT: the 2 ranks were told to stop"), err
    assert "the last checkpoint (step " in last and "continue with --resume" in last, last
    step = int(last.split("the last checkpoint (step ")[1].split(",")[0])
    assert step > 0 and Path(out / "checkpoint.json").exists()
