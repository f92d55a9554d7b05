"""Divergence: a non-finite loss or gradient stops the run (or skips that update, with
on_nonfinite="skip") naming the step and the first op that produced it (the batch rerun under
anomaly mode); a checkpoint with a non-finite value is never written; the last keep_last
periodic checkpoints and the best by validation loss are kept."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

import minitorch as mt
from minitorch import cli
from minitorch.io import load_checkpoint, load_model
from minitorch.train import Trainer, read_metrics, resolve
from minitorch.train.loop import TrainingDiverged
from verification import reliability
from verification.helpers import temp_op_fixture  # noqa: F401  (the temp_op fixture)

TINY = {"model": {"n_layer": 1, "n_embd": 16, "n_hidden": 32, "block_size": 16},
        "batch_size": 2, "iters": 5, "eval_interval": 100, "eval_iters": 1, "plot": False,
        "ckpt_interval": 1, "keep_last": 2}
STOPPED = "stopped naming the step and first op; no non-finite checkpoint written"


@pytest.fixture(scope="module", autouse=True)
def _publish():
    yield
    reliability.publish()


def _trainer(out: Path, **over) -> Trainer:
    return Trainer(resolve(None, {**TINY, "out_dir": str(out), **over}), stream=io.StringIO())


def _all_finite(folder: Path) -> bool:
    ck = load_checkpoint(folder)
    arrays = list(ck.model.values()) + [v for st in ck.optimizer["state"].values()
                                        for v in st.values() if isinstance(v, np.ndarray)]
    return all(np.isfinite(a).all() for a in arrays)


def test_huge_lr_stops_naming_step_and_first_op(tmp_path, capsys):
    """The --lr 1e300 case (float64, where the first update stays finite): the loss of
    step 1 is nan; the run stops with one line, exit 1; the step-1 checkpoint stays finite."""
    out = tmp_path / "run"
    argv = ["train", "--out", str(out), "--dtype", "float64", "--lr", "1e200", "--iters", "5",
            "--ckpt_interval", "1", "--eval_interval", "100", "--eval_iters", "1",
            "--batch_size", "2", "--n_layer", "1", "--n_embd", "16", "--n_hidden", "32",
            "--block_size", "16", "--plot", "False", "--sample_tokens", "4",
            "--no-tune-allocator"]
    with reliability.fault("diverging run (lr 1e200)", STOPPED, "test_divergence.py"):
        assert cli.main(argv) == 1
        err = capsys.readouterr().err.splitlines()[-1]
        assert err.startswith("minitorch train: error: training diverged at step 1: the loss "
                              "is nan; first non-finite op: forward of op '")
        assert "the last checkpoint (step 1) is intact" in err
        assert load_checkpoint(out).step == 1 and _all_finite(out)
        rows = read_metrics(out)
        assert rows[-1]["kind"] == "diverged" and rows[-1]["step"] == 1


def test_issue_lr_1e300_in_float32_stops_before_any_checkpoint(tmp_path):
    """`--lr 1e300` (float32): the first update overflows the weights to inf; the
    run stops at step 0 naming the parameter, and no checkpoint (NaN or otherwise) exists."""
    t = _trainer(tmp_path / "run", lr=1e300)
    with reliability.fault("diverging run (lr 1e300, float32)", STOPPED, "test_divergence.py"):
        with pytest.raises(TrainingDiverged, match=r"^training diverged at step 0: the update "
                                                   r"made [\w.]+ non-finite \(lr 1e\+300\)"):
            t.train()
        assert not (tmp_path / "run" / "checkpoint.json").exists()


def _poison_gradient(trainer: Trainer, temp_op, at_steps: set[int]) -> None:
    """Add a term whose forward is 0 and whose backward is inf to the loss at `at_steps`: the
    loss stays finite, the gradient of ln_f.weight does not (op 'inf_grad'). The trainer must
    run eagerly (replay=False): the fault is Python branching on the step, which a replayed
    step cannot see (and, the term's forward being 0, neither can its loss check)."""
    op = temp_op("inf_grad", lambda ctx, x: x * 0.0, lambda ctx, g: (g * np.inf,),
                 doc="y = 0*x; grad_x = inf*g (a deliberately broken rule).")
    model, forward = trainer.model, trainer.model.forward

    def poisoned(idx, targets=None):
        logits, loss = forward(idx, targets)
        if loss is not None and trainer.step in at_steps:
            loss = loss + mt.apply(op, model.ln_f.weight).sum()
        return logits, loss

    model.forward = poisoned


def test_non_finite_gradient_stops_naming_the_backward_op(tmp_path, temp_op):
    t = _trainer(tmp_path / "run", replay=False)
    _poison_gradient(t, temp_op, {3})
    with reliability.fault("non-finite gradient (broken backward rule)", STOPPED,
                           "test_divergence.py"):
        with pytest.raises(TrainingDiverged) as info:
            t.train()
        msg = str(info.value)
        assert msg.startswith("training diverged at step 3: the gradient of ln_f.weight is "
                              "non-finite (loss ")
        assert "first non-finite op: backward of op 'inf_grad'" in msg
        assert info.value.saved_step == 3 and load_checkpoint(tmp_path / "run").step == 3
        assert _all_finite(tmp_path / "run")


def test_skip_mode_drops_only_the_bad_update(tmp_path, temp_op):
    t = _trainer(tmp_path / "run", on_nonfinite="skip", replay=False)
    _poison_gradient(t, temp_op, {2})
    before = {}

    def snapshot(step):  # weights after `step` steps
        before[step] = t.model.state_dict()

    snapshot(0)
    while t.step < 4:  # drive the loop one step at a time through train(until)
        t.train(until=t.step + 1)
        snapshot(t.step)
    with reliability.fault("non-finite gradient with on_nonfinite=skip",
                           "that update skipped and named; the run continues",
                           "test_divergence.py"):
        rows = [r for r in read_metrics(tmp_path / "run") if r["kind"] == "step"]
        assert [r["step"] for r in rows] == [0, 1, 2, 3]
        assert rows[2]["loss"] is None and "backward of op 'inf_grad'" in rows[2]["skipped"]
        assert all(r["loss"] is not None for r in rows[:2] + rows[3:])
        for name, w in before[2].items():  # step 2 changed nothing; step 3 moved on
            assert np.array_equal(w, before[3][name]), name
        assert any(not np.array_equal(w, before[4][n]) for n, w in before[3].items())
        assert t.optimizer.state_dict()["state"][0]["step"] == 3  # 4 steps, one skipped


def test_checkpoint_with_non_finite_weights_is_never_written(tmp_path):
    t = _trainer(tmp_path / "run")
    t.model.ln_f.weight.data[0] = np.nan
    with reliability.fault("saving non-finite weights", "refused, nothing written",
                           "test_divergence.py"):
        with pytest.raises(TrainingDiverged, match=r"refusing to write a checkpoint at step 0: "
                                                   r"weight ln_f.weight is non-finite"):
            t.save(tmp_path / "ck")
        assert not (tmp_path / "ck").exists()


def test_non_finite_evaluation_stops_naming_the_forward_op(tmp_path):
    t = _trainer(tmp_path / "run", dtype="float64")
    t.model.lm_head.weight.data[:] = 1e308  # finite weights whose logits overflow
    with pytest.raises(TrainingDiverged, match=r"at step 0: evaluation loss is non-finite .*"
                                               r"first non-finite op: forward of op '"):
        t.train()
    assert not (tmp_path / "run" / "checkpoint.json").exists()


def test_overflowing_optimizer_state_is_never_saved(tmp_path):
    """Finite loss and gradients (1e300-scale) whose squares overflow Adam's exp_avg_sq: the
    weights stay finite, but the checkpoint is refused rather than written with an inf."""
    t = _trainer(tmp_path / "run", dtype="float64")
    t.model.lm_head.weight.data[:] = 1e300
    with pytest.raises(TrainingDiverged, match=r"refusing to write a checkpoint at step 1: "
                                               r"optimizer state \d+\.exp_avg_sq is non-finite"):
        t.train()
    assert not (tmp_path / "run" / "checkpoint.json").exists()


def test_keeps_last_k_and_the_best_checkpoint(tmp_path):
    out = tmp_path / "run"
    t = _trainer(out, iters=6, eval_interval=1, keep_last=2)
    t.train(until=4)
    t = Trainer.resume(out, stream=io.StringIO())  # best survives a resume
    t.train()
    kept = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert kept == ["best", "step-00000005", "step-00000006"]
    evals = [r for r in read_metrics(out) if r["kind"] == "eval"]
    best = min(evals, key=lambda r: r["val"])
    saved = json.loads((out / "checkpoints" / "best" / "checkpoint.json").read_text())
    assert saved["step"] == best["step"] and saved["extra"]["best"]["val"] == best["val"]
    assert load_checkpoint(out).extra["best"] == {"step": best["step"], "val": best["val"]}
    model, _, _ = load_model(out / "checkpoints" / "best")  # a loadable checkpoint folder
    assert model.num_parameters() == t.model.num_parameters()
    for step in (5, 6):
        assert load_checkpoint(out / "checkpoints" / f"step-{step:08d}").step == step


def test_end_only_checkpoints_keep_no_history(tmp_path):
    """ckpt_interval=0 means one checkpoint, at the end: no checkpoints/ folder at all."""
    _trainer(tmp_path / "run", ckpt_interval=0, eval_interval=1).train()
    assert sorted(p.name for p in (tmp_path / "run").iterdir() if p.is_dir()) == []
