"""Run folder locking under races: the locker re-checks that the file it locked is still the
folder's .lock (a refused holder removes it), and processes that hold-and-refuse on one folder
at once each either hold it or get the one-line busy refusal, never another error."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys

import pytest

from minitorch.train import run_dir
from minitorch.train.run_dir import LOCK, hold_run

REAL_FLOCK = fcntl.flock


def test_locker_holds_the_folders_current_lock_file(tmp_path, monkeypatch):
    """.lock is unlinked (a refused holder's cleanup) just before our first exclusive lock
    succeeds: the inode we locked is no longer the folder's .lock, so we must lock again."""
    out = tmp_path / "runs" / "x"
    calls = []

    def flock(fd, op):
        if op & fcntl.LOCK_EX:
            calls.append(op)
            if len(calls) == 1:
                (out / LOCK).unlink()  # the other process's cleanup, between open and lock
        return REAL_FLOCK(fd, op)

    monkeypatch.setattr(run_dir.fcntl, "flock", flock)
    with hold_run(out):
        monkeypatch.setattr(run_dir.fcntl, "flock", REAL_FLOCK)
        held = run_dir._HELD[str(out.resolve())][0]
        current = os.stat(out / LOCK).st_ino
        # (the inode number itself may be reused once the first file is closed)
        assert len(calls) == 2 and os.fstat(held.fileno()).st_ino == current
        with open(out / LOCK) as other:  # a second locker of the folder's .lock is refused
            with pytest.raises(BlockingIOError):
                REAL_FLOCK(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


CHILD = r"""
import json, sys, time
from minitorch.train import ConfigError
from minitorch.train.run_dir import RunBusyError, hold_run
out, seconds = sys.argv[1], float(sys.argv[2])
held = busy = 0
other = []
end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        with hold_run(out):
            held += 1
            raise ConfigError("planted refusal")
    except RunBusyError as e:
        busy += 1
        text = str(e)
        if not (text.startswith(f"{out} is in use by another trainer (PID ") and "\n" not in text):
            other.append(f"busy: {text}")
    except ConfigError as e:
        if str(e) != "planted refusal":
            other.append(f"{type(e).__name__}: {e}")
    except Exception as e:
        other.append(f"{type(e).__name__}: {e}")
print(json.dumps({"held": held, "busy": busy, "other": other[:5], "n_other": len(other)}))
"""


def test_refused_runs_racing_on_one_folder_hold_or_are_busy(tmp_path):
    """4 processes hold runs/x and refuse (the hold removes the lock and the folders it made)
    for 3 s each: every attempt held the folder or got the busy refusal, nothing else."""
    out = "runs/x"
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, out, "3"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    results = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
        results.append(json.loads(stdout))
    for r in results:
        assert r["n_other"] == 0, results
    assert sum(r["held"] for r in results) > 0, results
    # what racing refusals may leave: the folder and a lock file that another racer made
    left = list((tmp_path / "runs").rglob("*")) if (tmp_path / "runs").exists() else []
    assert all(p.is_dir() or p.name == LOCK for p in left), left

