"""Run ownership: a fresh `train` never replaces an existing run (it names the run and both ways
on: --resume, --overwrite), one trainer at a time holds a run folder (a second one stops at once
naming the holder's PID; a lock left by a process killed with SIGKILL is free), and `--resume`
on a finished run says so and rewrites nothing."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minitorch import cli
from minitorch.train import ConfigError, Trainer, resolve
from minitorch.train.run_dir import LOCK, hold_run
from verification import reliability

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--iters", "3", "--eval_interval", "2", "--eval_iters", "1", "--batch_size", "2",
        "--n_layer", "1", "--n_embd", "16", "--n_hidden", "32", "--block_size", "16",
        "--sample_tokens", "4", "--plot", "False", "--no-tune-allocator"]


@pytest.fixture(scope="module", autouse=True)
def _publish():
    yield
    reliability.publish()


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under folder but the lock -> (bytes, mtime in ns): 'nothing rewritten'."""
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != LOCK}


def _err(capsys) -> str:
    return capsys.readouterr().err


def test_fresh_train_into_a_run_is_refused_and_names_it(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert cli.main(["train", *TINY, "--out", out]) == 0
    before = _files(tmp_path / "run")
    _err(capsys)
    with reliability.fault("fresh train into an existing run",
                           "refused naming the run (step, date), --resume and --overwrite; "
                           "nothing rewritten", "test_run_ownership.py"):
        assert cli.main(["train", *TINY, "--out", out, "--lr", "1e-2"]) == 2
        err = _err(capsys)
        assert err.count("\n") == 1 and "Traceback" not in err
        assert f"{out} already holds a run (step 3 of 3, saved " in err
        assert "--resume" in err and "--overwrite" in err
        assert _files(tmp_path / "run") == before


def test_overwrite_replaces_the_run(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["train", *TINY, "--out", str(out), "--seed", "1"]) == 0
    assert (out / "checkpoints" / "best").is_dir()
    assert cli.main(["train", *TINY, "--out", str(out), "--overwrite", "--seed", "2",
                     "--ckpt_interval", "0"]) == 0
    saved = json.loads((out / "checkpoint.json").read_text())
    assert saved["config"]["seed"] == 2 and saved["step"] == 3
    assert json.loads((out / "config.json").read_text())["train"]["seed"] == 2
    assert not (out / "checkpoints").exists()  # the old run's history went with it


def test_library_trainer_refuses_an_existing_run_unless_overwrite(tmp_path):
    cfg = resolve(None, {"model": {"n_layer": 1, "n_embd": 16, "n_hidden": 32,
                                   "block_size": 16}, "iters": 2, "eval_iters": 1,
                         "batch_size": 2, "plot": False, "out_dir": str(tmp_path)})
    Trainer(cfg, stream=io.StringIO()).train()
    with pytest.raises(ConfigError, match="already holds a run"):
        Trainer(cfg, stream=io.StringIO()).train()
    assert Trainer(cfg, stream=io.StringIO(), overwrite=True).train()["step"] == 2


HOLDER = """
import sys
from minitorch.train.run_dir import hold_run
with hold_run(sys.argv[1]):
    print("locked", flush=True)
    sys.stdin.read()  # hold until the test closes our stdin
"""


def test_second_trainer_stops_at_once_naming_the_holder(tmp_path, capsys):
    out = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        with reliability.fault("second trainer on a locked run",
                               "refused at once naming the holder's PID", "test_run_ownership.py"):
            for argv in (["train", *TINY, "--out", str(out)],
                         ["train", "--resume", "--out", str(out)]):
                assert cli.main(argv) == 2
                err = _err(capsys)
                assert err == (f"minitorch train: error: {out} is in use by another trainer "
                               f"(PID {holder.pid}); wait for it to finish or choose another "
                               "--out\n")
            assert sorted(p.name for p in out.iterdir()) == [LOCK]  # nothing else written
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert cli.main(["train", *TINY, "--out", str(out)]) == 0  # released: free again


def test_lock_is_reentrant_within_one_process(tmp_path):
    with hold_run(tmp_path), hold_run(tmp_path):  # the CLI holds it, then Trainer.train
        pass
    with hold_run(tmp_path):
        pass


def _wait_for(predicate, what: str, proc: subprocess.Popen) -> None:
    """Poll until predicate() holds; fail (not hang) if the process exits first."""
    while not predicate():
        if proc.poll() is not None:
            pytest.fail(f"trainer exited ({proc.returncode}) before {what}: "
                        f"{proc.stderr.read()}")
        time.sleep(0.05)


def test_killed_trainer_leaves_a_free_lock_and_a_resumable_run(tmp_path, capsys):
    """A real trainer is SIGKILLed mid-run: meanwhile a second trainer is refused naming its
    PID; afterwards its stale lock file is no obstacle and --resume finishes the run."""
    out = tmp_path / "run"
    argv = ["train", *TINY, "--iters", "100000", "--ckpt_interval", "1", "--keep_last", "2",
            "--eval_interval", "1000", "--out", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "minitorch", *argv],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: (out / "checkpoint.json").is_file(), "its first checkpoint", proc)
        assert (out / LOCK).read_text().strip() == str(proc.pid)
        assert cli.main(["train", "--resume", "--out", str(out)]) == 2
        assert f"(PID {proc.pid})" in _err(capsys)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    with reliability.fault("trainer killed with SIGKILL mid-run",
                           "lock freed by the OS; --resume continues from the last checkpoint",
                           "test_run_ownership.py"):
        assert (out / LOCK).read_text().strip() == str(proc.pid)  # the stale file is still there
        step = json.loads((out / "checkpoint.json").read_text())["step"]
        assert cli.main(["train", "--resume", "--out", str(out), "--iters", str(step + 2)]) == 0
        assert json.loads((out / "checkpoint.json").read_text())["step"] == step + 2
        kept = sorted(p.name for p in (out / "checkpoints").iterdir())
        assert kept == ["best", f"step-{step + 1:08d}", f"step-{step + 2:08d}"]  # keep_last 2


def test_resume_on_a_finished_run_says_so_and_rewrites_nothing(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["train", *TINY, "--out", str(out), "--plot", "True"]) == 0
    before = _files(out)
    assert {"loss.png", "samples.json", "metrics.jsonl", "checkpoint.json"} <= set(before)
    _err(capsys)
    with reliability.fault("--resume on a finished run", "says so, exit 0, no file rewritten",
                           "test_run_ownership.py"):
        for iters in ("3", "2"):  # at --iters, and below it (a run at step 200 asked for 100)
            assert cli.main(["train", "--resume", "--out", str(out), "--iters", iters]) == 0
            err = _err(capsys)
            assert "the run is already finished (step 3" in err and "nothing changed" in err
            assert _files(out) == before
    trainer = Trainer.resume(out, {"iters": 2}, stream=io.StringIO())
    assert trainer.train()["step"] == 3 and _files(out) == before  # the library path too


def test_lock_file_names_the_pid_of_its_holder(tmp_path):
    with hold_run(tmp_path / "r"):
        assert (tmp_path / "r" / LOCK).read_text() == f"{os.getpid()}\n"


def test_a_run_without_checkpoint_is_not_offered_resume_and_overwrite_sweeps_it(tmp_path, capsys):
    """A folder with a run's metrics but no checkpoint: the refusal offers --overwrite only (a
    --resume would fail); --overwrite also removes old array and temp files a kill left."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.jsonl").write_text("")
    (out / ".checkpoint.json.abc.tmp").write_text("torn")
    (out / "ckpt-00000007-0123456789ab.safetensors").write_bytes(b"old")
    capsys.readouterr()
    assert cli.main(["train", *TINY, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no checkpoint yet" in err and "--resume" not in err and "--overwrite" in err
    assert cli.main(["train", *TINY, "--out", str(out), "--overwrite"]) == 0
    assert not list(out.glob(".*.tmp"))
    assert [p.name for p in out.glob("ckpt-*")] == [
        json.loads((out / "checkpoint.json").read_text())["arrays"]]
