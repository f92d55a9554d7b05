"""The Trainer: same seed -> identical curve; N steps == N/2 + checkpoint + resume + N/2 (identical
losses, bit-identical weights and optimizer state); the files a run writes; the schedule; and
seeded sampling (temperature, top-k, context cropping)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from minitorch.generate.sample import generate, next_token_probs
from minitorch.models.gpt import GPT, GPTConfig
from minitorch.optim import warmup_cosine
from minitorch.train import ConfigError, Trainer, read_metrics, resolve

TINY = {"model": {"n_layer": 1, "n_embd": 16, "n_hidden": 32, "block_size": 16},
        "batch_size": 4, "iters": 8, "eval_interval": 3, "eval_iters": 2, "sample_tokens": 8,
        "ckpt_interval": 0, "plot": False}
# Two settings that together exercise every piece of saved state: Adam + constant lr in float32,
# and AdamW (two param groups) + warmup/cosine + clipping in float64.
SETTINGS = {
    "adam-f32": {},
    "adamw-cosine-clip-f64": {"optimizer": "adamw", "weight_decay": 0.1, "schedule": "cosine",
                              "warmup": 2, "lr": 3e-3, "grad_clip": 0.5, "dtype": "float64",
                              "model": {**TINY["model"], "n_head": 2, "activation": "gelu"}},
}


def _run(out, until=None, **over) -> Trainer:
    t = Trainer(resolve(None, {**TINY, "out_dir": str(out), **over}), stream=io.StringIO(),
                sampler=generate)
    t.train(until=until)
    return t


def _curve(out) -> tuple[list[float], list[tuple]]:
    rows = read_metrics(out)
    steps = [r["loss"] for r in rows if r["kind"] == "step"]
    evals = [(r["step"], r["train"], r["val"]) for r in rows if r["kind"] == "eval"]
    return steps, evals


def test_same_seed_same_curve(tmp_path, record):
    _run(tmp_path / "a", seed=5)
    _run(tmp_path / "b", seed=5)
    _run(tmp_path / "c", seed=6)  # negative control: the comparison notices a different seed
    a, b, c = _curve(tmp_path / "a"), _curve(tmp_path / "b"), _curve(tmp_path / "c")
    assert a == b
    assert a[0] != c[0] and a[1] != c[1]
    record("same_seed_same_curve", "trainer", "tiny adam f32", 0.0, tol=0.0, passed=a == b)


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_resume_equals_uninterrupted(tmp_path, setting, record):
    over = SETTINGS[setting]
    full = _run(tmp_path / "full", **over)
    _run(tmp_path / "split", until=4, **over)  # stops after 4 of 8 steps, checkpointed
    resumed = Trainer.resume(tmp_path / "split", stream=io.StringIO(), sampler=generate)
    assert resumed.step == 4
    resumed.train()
    assert _curve(tmp_path / "full") == _curve(tmp_path / "split")  # losses: identical floats
    assert len(_curve(tmp_path / "split")[0]) == 8
    worst = 0.0
    for name, w in full.model.state_dict().items():
        r = resumed.model.state_dict()[name]
        worst = max(worst, float(np.abs(w - r).max()))
        assert w.dtype == r.dtype and np.array_equal(w, r), name
    for (_, a), (_, b) in zip(sorted(full.optimizer.state_dict()["state"].items()),
                              sorted(resumed.optimizer.state_dict()["state"].items())):
        assert a["step"] == b["step"] == 8
        assert np.array_equal(a["exp_avg"], b["exp_avg"]) and np.array_equal(a["exp_avg_sq"],
                                                                              b["exp_avg_sq"])
    record("resume_equivalence", setting, "8 steps vs 4+resume+4", worst, tol=0.0,
           passed=worst == 0.0)


def test_resume_check_catches_lost_rng_state(tmp_path):
    """Negative control: resuming without the data RNG's saved state changes the losses, so the
    equivalence test above would catch a checkpoint that forgot it."""
    _run(tmp_path / "full")
    _run(tmp_path / "split", until=4)
    resumed = Trainer.resume(tmp_path / "split", stream=io.StringIO())
    resumed.data_rng = np.random.default_rng(12345)  # what a fresh, unrestored RNG would do
    resumed.train()
    assert _curve(tmp_path / "full")[0][:4] == _curve(tmp_path / "split")[0][:4]
    assert _curve(tmp_path / "full")[0][4:] != _curve(tmp_path / "split")[0][4:]


def test_resume_rejects_changed_config_and_corpus(tmp_path):
    _run(tmp_path / "r", until=2)
    with pytest.raises(ConfigError, match=r"differ from its config: \['lr'\]"):
        Trainer.resume(tmp_path / "r", {"lr": 1.0})
    other = tmp_path / "other.txt"
    other.write_text("a different corpus " * 200)
    with pytest.raises(ConfigError, match=r"differ from its config: \['data'\]"):
        Trainer.resume(tmp_path / "r", {"data": str(other)})
    longer = Trainer.resume(tmp_path / "r", {"iters": 10}, stream=io.StringIO())
    assert longer.cfg.iters == 10 and longer.step == 2
    _run(tmp_path / "o", until=2, data=str(other))
    other.write_text("the same path, edited text " * 200)
    with pytest.raises(ConfigError, match="corpus .* differs from the one this checkpoint"):
        Trainer.resume(tmp_path / "o")


@pytest.mark.slow
def test_run_writes_metrics_samples_config(tmp_path):
    t = _run(tmp_path / "run", plot=True)
    out = tmp_path / "run"
    evals = [r for r in read_metrics(out) if r["kind"] == "eval"]
    assert [r["step"] for r in evals] == [0, 3, 6, 7]  # step 0, every 3, and the last step
    assert all(np.isfinite([r["train"], r["val"]]).all() for r in evals)
    assert [r["step"] for r in read_metrics(out) if r["kind"] == "step"] == list(range(8))
    samples = json.loads((out / "samples.json").read_text())
    assert samples["before"]["step"] == 0 and samples["after"]["step"] == 8
    assert len(samples["before"]["text"]) == 8 and samples["before"]["text"] != samples[
        "after"]["text"]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["train"] == t.cfg.to_dict() and cfg["params"] == t.model.num_parameters()
    assert cfg["model"]["vocab_size"] == t.tokenizer.vocab_size
    assert (out / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_eval_is_mean_over_fixed_batches(tmp_path):
    t = Trainer(resolve(None, {**TINY, "out_dir": str(tmp_path)}), stream=io.StringIO())
    first = t.evaluate()
    assert t.evaluate() == first  # the same batches every time; no graph, no state change
    losses = [t.model(x, y)[1].item() for x, y in t.eval_batches["val"]]
    assert first["val"] == float(np.mean(losses))
    assert all(p.grad is None for p in t.model.parameters())


def test_training_lowers_the_loss_on_the_default_corpus(tmp_path):
    t = _run(tmp_path, iters=40, eval_interval=39, lr=3e-3, batch_size=8)
    evals = [r for r in read_metrics(tmp_path) if r["kind"] == "eval"]
    assert evals[-1]["val"] < evals[0]["val"] - 0.5, evals
    assert t.tokenizer.vocab_size == t.model_config.vocab_size


def test_lr_follows_the_schedule(tmp_path):
    t = Trainer(resolve(None, {**TINY, "out_dir": str(tmp_path), "schedule": "cosine",
                               "warmup": 3, "lr": 1e-2}), stream=io.StringIO())
    t.train()
    lrs = [r["lr"] for r in read_metrics(tmp_path) if r["kind"] == "step"]
    assert lrs == [warmup_cosine(s, 1e-2, 3, 8, 0.1) for s in range(8)]
    assert lrs[2] == pytest.approx(1e-2) and lrs[-1] == pytest.approx(1e-3)


def _tiny_model(block=8, vocab=11):
    return GPT(GPTConfig(vocab_size=vocab, block_size=block, n_layer=1, n_embd=8, n_hidden=16))


def test_sampling_is_seeded_and_crops_context():
    m = _tiny_model()
    a = generate(m, [1, 2, 3], 20, rng=np.random.default_rng(4))
    b = generate(m, [1, 2, 3], 20, rng=np.random.default_rng(4))
    c = generate(m, [1, 2, 3], 20, rng=np.random.default_rng(5))
    assert a.shape == (23,) and np.array_equal(a, b) and not np.array_equal(a, c)
    assert list(a[:3]) == [1, 2, 3]  # 23 > block_size 8: the context was cropped, no error
    batch = generate(m, np.array([[1, 2], [3, 4]]), 5, rng=np.random.default_rng(0))
    assert batch.shape == (2, 7)


def test_sampling_temperature_and_top_k():
    logits = np.array([[2.0, 1.0, 0.5, 3.0, -1.0]])
    greedy = next_token_probs(logits, temperature=0)
    assert greedy.tolist() == [[0, 0, 0, 1, 0]]
    p = next_token_probs(logits, top_k=2)
    assert set(np.flatnonzero(p[0])) == {0, 3}
    assert p[0, 3] / p[0, 0] == pytest.approx(np.exp(1.0))
    hot = next_token_probs(logits, temperature=10.0)
    assert hot.max() - hot.min() < next_token_probs(logits).max() - next_token_probs(logits).min()
    m = _tiny_model()
    draws = generate(m, [0], 30, top_k=1, rng=np.random.default_rng(1))
    assert np.array_equal(draws, generate(m, [0], 30, temperature=0))  # top-1 == greedy
    with pytest.raises(ValueError, match="top_k"):
        next_token_probs(logits, top_k=0)
    with pytest.raises(ValueError, match="temperature"):
        next_token_probs(logits, temperature=-1)


def test_plot_is_skipped_with_a_message_without_matplotlib(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import now raises ImportError
    stream = io.StringIO()
    Trainer(resolve(None, {**TINY, "out_dir": str(tmp_path), "plot": True}),
            stream=stream, sampler=generate).train()
    assert "loss plot skipped: matplotlib is not installed" in stream.getvalue()
    assert not (tmp_path / "loss.png").exists() and (tmp_path / "samples.json").is_file()


class _Clock:
    """A fake monotonic clock the test advances by hand."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_bar_redraws_in_place_on_a_terminal():
    from minitorch.train.progress import ProgressBar

    class Tty(io.StringIO):
        def isatty(self):
            return True

    clock = _Clock()
    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        bar = ProgressBar(10, stream, tokens_per_step=64, width=10, clock=clock)
        clock.now += 2.0
        bar.update(10, 1.25)
        bar.message("step 9/10 | val 1.5")
        bar.close()
    # one step in 2 s: 0.5 steps/s * 64 tokens = 32 tokens/s; eta 0 at the last step
    assert "\r[##########] 10/10 loss 1.2500 | 32 tok/s | eta 0:00" in tty.getvalue()
    assert pipe.getvalue() == ("step 10/10 | loss 1.2500 | 32 tok/s | eta 0:00\n"
                               "step 9/10 | val 1.5\n")  # plain lines: logs stay clean


def test_progress_lines_when_piped_are_periodic_with_eta():
    """Not on a terminal: one line per `interval` seconds (not per step), with tokens/s and an
    ETA from the rate so far; a skipped update shows as such."""
    from minitorch.train.progress import ProgressBar

    clock, pipe = _Clock(), io.StringIO()
    bar = ProgressBar(100, pipe, tokens_per_step=1000, interval=5.0, clock=clock)
    for step in range(1, 21):  # 20 steps, 1 s each: a line at 5, 10, 15, 20 s
        clock.now += 1.0
        bar.update(step, None if step == 10 else 2.0)
    lines = pipe.getvalue().splitlines()
    assert [line.split(" |")[0] for line in lines] == ["step 5/100", "step 10/100",
                                                       "step 15/100", "step 20/100"]
    assert lines[1] == "step 10/100 | loss skipped | 1,000 tok/s | eta 1:30"
    assert lines[3].endswith("| 1,000 tok/s | eta 1:20")  # 80 steps left at 1 step/s


def test_trainer_uses_the_optimizers_schedule(tmp_path):
    """One lr path: the Trainer's lr is optim.LRScheduler's, in the optimizer and in the log."""
    from minitorch.optim import LRScheduler

    t = Trainer(resolve(None, {**TINY, "out_dir": str(tmp_path), "schedule": "cosine",
                               "warmup": 2, "lr": 1e-2}), stream=io.StringIO())
    assert isinstance(t.scheduler, LRScheduler) and not hasattr(t, "lr_at")
    seen = []
    for _ in range(4):
        seen.append([g["lr"] for g in t.optimizer.param_groups])
        t.train_step()
    assert seen == [[warmup_cosine(s, 1e-2, 2, 8, 0.1)] * 2 for s in range(4)]
