"""Run safety against signals and kills, with a real `minitorch train` subprocess each time: the
first SIGINT, SIGTERM or SIGHUP ends the run at the next step boundary with a checkpoint and a
line saying where (exit 128 + the signal), and --resume continues bit-identically; a second
signal stops at once with a line that claims no checkpoint it did not write. A SIGKILL between
the run's checkpoint and its history copy, inside a copy or while pruning old copies leaves
every copy recoverable: --resume remakes it and --keep_last counts only complete copies. A run
killed after its final checkpoint gets its after-training sample and plot on --resume.
Faults are planted at known points by verification/kill_driver.py; nothing here is timed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from minitorch import cli
from minitorch.io import load_checkpoint
from minitorch.train import history
from verification import reliability

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--eval_interval", "2", "--eval_iters", "1", "--batch_size", "2", "--n_layer", "1",
        "--n_embd", "16", "--n_hidden", "32", "--block_size", "16", "--sample_tokens", "6",
        "--plot", "False", "--no-tune-allocator"]
HANG = 300  # seconds: only a hung trainer takes this long


@pytest.fixture(scope="module", autouse=True)
def _publish():
    yield
    reliability.publish()


def _driver(plant: str, arg: str, out: Path, *args: str, **kw) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "verification.kill_driver", plant, arg, "--", "train", *TINY,
           "--out", str(out), *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + HANG
    while not path.exists():
        assert proc.poll() is None, f"trainer exited ({proc.returncode}): {proc.stderr.read()}"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _arrays(folder: Path) -> dict[str, np.ndarray]:
    ck = load_checkpoint(folder)
    out = {f"model/{k}": v for k, v in ck.model.items()}
    out.update({f"optim/{i}/{k}": v for i, st in ck.optimizer["state"].items()
                for k, v in st.items() if isinstance(v, np.ndarray)})
    return out


def _same(a: Path, b: Path) -> bool:
    x, y = _arrays(a), _arrays(b)
    return x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)


def _reference(tmp_path: Path, iters: int, *args: str) -> Path:
    ref = tmp_path / f"ref{iters}"
    assert cli.main(["train", *TINY, "--iters", str(iters), "--out", str(ref), *args]) == 0
    return ref


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_signal_stops_at_the_step_boundary_with_a_checkpoint(tmp_path, sig, capsys):
    """One signal inside step 3 (no periodic checkpoints): the step finishes, a checkpoint of
    step 4 is written, the line names it and --resume; resuming to step 7 equals a run of 7."""
    out, flag = tmp_path / "run", tmp_path / "in_step"
    with reliability.fault(f"{sig} to a training run", "stops at the step boundary with a "
                           "checkpoint and a line naming it; --resume continues bit-identically",
                           "test_run_safety.py"):
        proc = _driver("hold_step_3", str(flag), out, "--iters", "1000", "--ckpt_interval", "0")
        try:
            _wait_for(flag, proc)
            proc.send_signal(getattr(signal, sig))
            time.sleep(0.2)  # the handler has noted it (it prints; the step is still held)
            Path(f"{flag}.release").write_text("")
            _, err = proc.communicate(timeout=HANG)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 128 + getattr(signal, sig), err
        assert f"{sig}: stopping after this step with a checkpoint" in err
        manifest = out / "checkpoint.json"
        assert err.rstrip().splitlines()[-1] == (
            f"minitorch train: stopped by {sig} after step 4: checkpoint written to {manifest}; "
            f"continue with --resume --out {out}")
        assert "Traceback" not in err
        assert load_checkpoint(out).step == 4
        assert cli.main(["train", "--resume", "--out", str(out), "--iters", "7"]) == 0
        assert _same(out, _reference(tmp_path, 7))


@pytest.mark.parametrize("ckpt_interval", [0, 1])
def test_second_signal_stops_at_once_and_claims_only_what_exists(tmp_path, ckpt_interval):
    """Two SIGTERMs inside a held step 3: the run ends at once (the step never finishes), the
    line says the step-3 checkpoint is intact when there is one and that none was written when
    there is none."""
    out, flag = tmp_path / "run", tmp_path / "in_step"
    with reliability.fault("a second signal", "stops at once; the line is true about the "
                           "checkpoint", "test_run_safety.py"):
        proc = _driver("hold_step_3", str(flag), out, "--iters", "1000", "--ckpt_interval",
                       str(ckpt_interval), "--keep_last", "0")
        try:
            _wait_for(flag, proc)
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.2)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=HANG)  # the step is held: only "at once" ends it
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 128 + signal.SIGTERM, err
        last = err.rstrip().splitlines()[-1]
        if ckpt_interval:
            assert last == (f"minitorch train: stopped at once by SIGTERM; the last checkpoint "
                            f"(step 3, {out / 'checkpoint.json'}) is intact; continue with "
                            f"--resume --out {out}")
            assert load_checkpoint(out).step == 3
        else:
            assert last == "minitorch train: stopped at once by SIGTERM; no checkpoint was written"
            assert not (out / "checkpoint.json").exists()
        assert "Traceback" not in err and not list(out.glob(".*.tmp"))


@pytest.mark.parametrize("plant, arg, killed_at", [
    ("kill_before_copy", "step-00000004", 4), ("kill_mid_copy", "step-00000004", 4),
    ("kill_mid_prune", "step-00000002", 6)])
def test_kill_around_a_history_copy_is_recovered_on_resume(tmp_path, plant, arg, killed_at):
    """SIGKILL at step 4 between the checkpoint and its copy, inside the copy (its array file
    written, its manifest not), or at step 6 while pruning the step-2 copy (--keep_last 2):
    --resume remakes or removes
    what the kill left, every copy --keep_last keeps is complete and equals the uninterrupted
    run's, and a partial copy never counts toward --keep_last."""
    args = ["--iters", "8", "--ckpt_interval", "2"]
    keep = "2" if plant == "kill_mid_prune" else "10"
    out = tmp_path / "run"
    with reliability.fault("SIGKILL around a checkpoint history copy", "--resume remakes the "
                           "copy; --keep_last counts complete copies only", "test_run_safety.py"):
        proc = _driver(plant, arg, out, *args, "--keep_last", keep)
        _, err = proc.communicate(timeout=HANG)
        assert proc.returncode == -signal.SIGKILL, err
        assert load_checkpoint(out).step == killed_at
        assert not history.is_complete(out / "checkpoints" / arg)  # what the kill left
        assert cli.main(["train", "--resume", "--out", str(out)]) == 0
        ref = _reference(tmp_path, 8, "--ckpt_interval", "2", "--keep_last", keep)
        kept = sorted(p.name for p in (out / "checkpoints").iterdir())
        want = ["best", *(f"step-{s:08d}" for s in (2, 4, 6, 8)[-int(keep):])]
        assert kept == want == sorted(p.name for p in (ref / "checkpoints").iterdir())
        for name in want[1:]:
            assert history.is_complete(out / "checkpoints" / name)
            assert _same(out / "checkpoints" / name, ref / "checkpoints" / name)


@pytest.mark.parametrize("plant", ["kill_before_finish", "kill_mid_finish"])
def test_run_killed_after_its_last_checkpoint_finishes_on_resume(tmp_path, plant, capsys):
    """SIGKILL after the final checkpoint, before or inside the after-training steps: --resume
    writes the sample and the plot (the uninterrupted run's sample), then a second --resume
    says the run is finished."""
    out = tmp_path / "run"
    with reliability.fault("SIGKILL after the final checkpoint", "--resume writes the "
                           "after-training sample and plot", "test_run_safety.py"):
        proc = _driver(plant, "-", out, "--iters", "4", "--plot", "True")
        _, err = proc.communicate(timeout=HANG)
        assert proc.returncode == -signal.SIGKILL, err
        assert load_checkpoint(out).step == 4 and not (out / "loss.png").exists()
        capsys.readouterr()
        assert cli.main(["train", "--resume", "--out", str(out)]) == 0
        assert "finishing" in capsys.readouterr().err
        ref = _reference(tmp_path, 4, "--plot", "True")
        samples = json.loads((out / "samples.json").read_text())
        assert samples == json.loads((ref / "samples.json").read_text())
        assert (out / "loss.png").stat().st_size > 0
        assert cli.main(["train", "--resume", "--out", str(out)]) == 0
        assert "already finished" in capsys.readouterr().err


def test_keep_last_counts_only_complete_copies(tmp_path):
    """Three copies, the newest partial (its manifest never written): pruning to 2 keeps the
    two complete ones and removes the partial one (it used to count as one of the 2)."""
    out = tmp_path / "run"
    assert cli.main(["train", *TINY, "--iters", "2", "--out", str(out), "--ckpt_interval",
                     "0"]) == 0
    for step in (2, 3, 4):
        history.copy_latest(out, history.step_dir(out, step))
    (history.step_dir(out, 4) / "checkpoint.json").unlink()  # as a kill inside the copy leaves
    history.prune(out, 2)
    kept = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert kept == ["step-00000002", "step-00000003"]
    assert all(history.is_complete(out / "checkpoints" / k) for k in kept)
