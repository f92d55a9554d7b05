"""The training loop: tokenizer, model, optimizer and schedule from a TrainConfig, then steps with
periodic evaluation, metrics, samples, a loss plot and atomic checkpoints.

Every random draw comes from generators seeded by cfg.seed whose states are checkpointed, so a
run is reproducible and a resumed run is bit-identical to an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ..data import Corpus, build_tokenizer, get_batch, load_tokenizer
from ..engine import Generator, no_grad
from ..generate.sample import generate
from ..io import (
    Checkpoint,
    CheckpointError,
    atomic_write,
    load_checkpoint,
    save_checkpoint,
    token_splits,
)
from ..nn.gpt import GPT
from ..optim import Adam, AdamW, clip_grad_norm_, warmup_cosine
from .config import ConfigError, TrainConfig, apply_overrides
from .plot import plot_metrics

# Keys a resumed run may change; everything else must match the checkpoint's config.
RESUMABLE_KEYS = ("iters", "eval_interval", "ckpt_interval", "sample_tokens", "plot", "out_dir")
DTYPES = {"float32": np.float32, "float64": np.float64}


def build_optimizer(cfg: TrainConfig, model: GPT):
    """Adam/AdamW over two groups: weight decay on ndim >= 2 parameters, none on biases/norms."""
    params = model.parameters()
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    cls = AdamW if cfg.optimizer == "adamw" else Adam
    return cls([g for g in groups if g["params"]], lr=cfg.lr, betas=cfg.betas, eps=cfg.eps,
               weight_decay=cfg.weight_decay)


class Trainer:
    """Builds everything a run needs from `cfg`; `checkpoint` (see Trainer.resume) restores it.

    Args:
        cfg: the resolved run config.
        checkpoint: state to continue from (already validated), or None for a fresh run.
        stream: where the progress bar and evaluation lines go.
    """

    def __init__(self, cfg: TrainConfig, checkpoint: Checkpoint | None = None,
                 stream: TextIO | None = None):
        self.cfg, self.out = cfg, Path(cfg.out_dir)
        self.stream = stream or sys.stderr
        corpus = Corpus.open(cfg.data)  # checked and hashed in blocks, never held whole
        self.corpus_sha256 = corpus.sha256
        if checkpoint is not None:
            if checkpoint.extra.get("corpus_sha256") != self.corpus_sha256:
                raise ConfigError(f"the corpus ({cfg.data or 'embedded default'}) differs from "
                                  "the one this checkpoint was trained on")
            self.tokenizer = load_tokenizer(checkpoint.tokenizer)
        else:
            self.tokenizer = build_tokenizer(cfg.tokenizer, corpus, cfg.vocab_size)
        self.model_config = cfg.model_config(self.tokenizer.vocab_size)
        self.train_data, self.val_data = token_splits(  # memmaps of a token file in the run
            corpus, self.tokenizer, self.out, self.model_config.block_size)
        self.generator = Generator(cfg.seed)  # minitorch's random source: weight init
        self.model = GPT(self.model_config, generator=self.generator, dtype=DTYPES[cfg.dtype])
        self.optimizer = build_optimizer(cfg, self.model)
        data_seed, eval_seed, self.sample_seed = np.random.SeedSequence(cfg.seed).spawn(3)
        self.data_rng = np.random.default_rng(data_seed)  # training batches, continues on resume
        T = self.model_config.block_size
        eval_rng = np.random.default_rng(eval_seed)  # the same eval batches at every evaluation
        self.eval_batches = {
            split: [get_batch(data, cfg.batch_size, T, eval_rng) for _ in range(cfg.eval_iters)]
            for split, data in (("train", self.train_data), ("val", self.val_data))
        }
        self.step, self.elapsed = 0, 0.0
        if checkpoint is not None:
            self._restore(checkpoint)

    @classmethod
    def resume(cls, out_dir: str | Path, overrides: dict[str, Any] | None = None,
               stream: TextIO | None = None) -> Trainer:
        """Continue the run saved in out_dir. Only RESUMABLE_KEYS may differ from its config;
        a bad checkpoint raises CheckpointError before anything is written."""
        ckpt = load_checkpoint(out_dir)
        saved = TrainConfig.from_dict(ckpt.config)
        cfg = apply_overrides(saved, overrides or {})
        changed = [f.name for f in dataclasses.fields(TrainConfig)
                   if getattr(cfg, f.name) != getattr(saved, f.name)
                   and f.name not in RESUMABLE_KEYS]
        if changed:
            raise ConfigError(f"--resume continues the saved run; these keys differ from its "
                              f"config: {changed}")
        return cls(cfg.replace(out_dir=str(out_dir)), ckpt, stream)

    def _restore(self, ckpt: Checkpoint) -> None:
        """Load every part of the checkpoint into this trainer; a part whose content does not
        fit raises CheckpointError naming it (nothing is written)."""
        parts = [("model", lambda: self.model.load_state_dict(ckpt.model)),
                 ("optimizer", lambda: self.optimizer.load_state_dict(ckpt.optimizer)),
                 ("rng", lambda: self._restore_rng(ckpt.rng))]
        for name, load in parts:
            try:
                load()
            except (KeyError, TypeError, ValueError, IndexError) as e:
                raise CheckpointError(f"checkpoint part '{name}' does not fit this run: "
                                      f"{type(e).__name__}: {e}") from None
        self.step, self.elapsed = ckpt.step, float(ckpt.extra.get("elapsed", 0.0))

    def _restore_rng(self, rng: dict) -> None:
        self.data_rng.bit_generator.state = rng["data"]
        self.generator.set_state(rng["generator"])

    # -- one step, evaluation, samples -------------------------------------------------------

    def lr_at(self, step: int) -> float:
        cfg = self.cfg
        if cfg.schedule == "cosine":
            return warmup_cosine(step, cfg.lr, cfg.warmup, cfg.iters, cfg.min_lr_ratio)
        return cfg.lr

    def train_step(self) -> dict[str, float]:
        """One optimizer step on a fresh batch; returns the row logged for it."""
        cfg, step = self.cfg, self.step
        lr = self.lr_at(step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        x, y = get_batch(self.train_data, cfg.batch_size, self.model_config.block_size,
                         self.data_rng)  # (B, T) each
        self.optimizer.zero_grad()
        _, loss = self.model(x, y)
        loss.backward()
        row = {"kind": "step", "step": step, "loss": loss.item(), "lr": lr}
        if cfg.grad_clip > 0:
            row["grad_norm"] = clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
        self.optimizer.step()
        self.step += 1
        return row

    def evaluate(self) -> dict[str, float]:
        """Mean loss over the fixed eval batches of each split, without building a graph."""
        self.model.eval()
        out = {}
        with no_grad():
            for split, batches in self.eval_batches.items():
                out[split] = float(np.mean([self.model(x, y)[1].item() for x, y in batches]))
        self.model.train()
        return out

    def sample(self, tokens: int | None = None) -> str:
        """A seeded sample (same seed every call) that starts from a newline when it can."""
        n = self.cfg.sample_tokens if tokens is None else tokens
        try:
            prompt = self.tokenizer.encode("\n")
        except ValueError:
            prompt = [0]
        ids = generate(self.model, prompt, n, rng=np.random.default_rng(self.sample_seed))
        return self.tokenizer.decode(ids[len(prompt):])

    def checkpoint(self) -> Checkpoint:
        """The run's full state now (copies), ready for save_checkpoint."""
        rng = {"data": self.data_rng.bit_generator.state, "generator": self.generator.get_state()}
        return Checkpoint(
            step=self.step, model=self.model.state_dict(), optimizer=self.optimizer.state_dict(),
            rng=rng,
            config=self.cfg.to_dict(), model_config=dataclasses.asdict(self.model_config),
            tokenizer=self.tokenizer.to_dict(),
            extra={"corpus_sha256": self.corpus_sha256, "elapsed": self.elapsed,
                   "params": self.model.num_parameters()},
        )

    # -- the run ------------------------------------------------------------------------------

    def train(self, until: int | None = None) -> dict[str, Any]:
        """Run steps up to `until` (default: cfg.iters), checkpointing as configured.

        Stopping early (until < iters) leaves a checkpoint that Trainer.resume continues.
        Returns a summary: step, last evaluation, elapsed seconds, params, out_dir.
        """
        cfg, out = self.cfg, self.out
        stop = cfg.iters if until is None else min(until, cfg.iters)
        out.mkdir(parents=True, exist_ok=True)
        self._start_files()
        bar = ProgressBar(cfg.iters, self.stream)
        last_eval: dict[str, Any] = {}
        with open(out / "metrics.jsonl", "a") as metrics:
            while self.step < stop:
                s, t0 = self.step, time.perf_counter()
                if s % cfg.eval_interval == 0 or s == cfg.iters - 1:
                    last_eval = {"kind": "eval", "step": s, **self.evaluate(),
                                 "lr": self.lr_at(s), "time": round(self.elapsed, 3)}
                    metrics.write(json.dumps(last_eval) + "\n")
                    metrics.flush()
                    bar.message(f"step {s:>5}/{cfg.iters} | train {last_eval['train']:.4f} | "
                                f"val {last_eval['val']:.4f} | lr {last_eval['lr']:.2e} | "
                                f"{self.elapsed:.1f}s")
                row = self.train_step()
                metrics.write(json.dumps(row) + "\n")
                self.elapsed += time.perf_counter() - t0
                bar.update(self.step, row["loss"])
                if (cfg.ckpt_interval and self.step % cfg.ckpt_interval == 0) or self.step == stop:
                    metrics.flush()
                    save_checkpoint(out, self.checkpoint())
        bar.close()
        if self.step == cfg.iters:
            self._finish()
        return {"step": self.step, "eval": last_eval, "elapsed": self.elapsed,
                "params": self.model.num_parameters(), "out_dir": str(out)}

    def _start_files(self) -> None:
        """A fresh run writes config.json, clears metrics and samples the untrained model; a
        resumed run drops metric rows from steps the checkpoint had not reached."""
        out = self.out
        metrics = out / "metrics.jsonl"
        if self.step == 0:
            _write_text(out / "config.json", json.dumps({
                "train": self.cfg.to_dict(), "model": dataclasses.asdict(self.model_config),
                "params": self.model.num_parameters(), "tokenizer": self.tokenizer.to_dict(),
            }, indent=1))
            _write_text(metrics, "")
            _write_text(out / "samples.json", json.dumps({"before": {
                "step": 0, "text": self.sample()}}, indent=1))
        else:
            rows = [r for r in read_metrics(out) if r["step"] < self.step]
            _write_text(metrics, "".join(json.dumps(r) + "\n" for r in rows))

    def _finish(self) -> None:
        out = self.out
        path = out / "samples.json"
        samples = json.loads(path.read_text()) if path.is_file() else {}
        samples["after"] = {"step": self.step, "text": self.sample()}
        _write_text(path, json.dumps(samples, indent=1))
        if self.cfg.plot:
            title = run_title(self.cfg, self.model.num_parameters())
            self.stream.write(plot_metrics(read_metrics(out), out / "loss.png", title=title) + "\n")


class ProgressBar:
    """A one-line text bar, redrawn in place on a terminal; eval lines are printed above it."""

    def __init__(self, total: int, stream: TextIO, width: int = 30):
        self.total, self.stream, self.width = total, stream, width
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.t0, self.last_draw, self.first_step = time.perf_counter(), 0.0, None

    def update(self, step: int, loss: float) -> None:
        if self.first_step is None:
            self.first_step = step - 1
        now = time.perf_counter()
        if not self.tty or (now - self.last_draw < 0.1 and step < self.total):
            return
        self.last_draw = now
        done = int(self.width * step / self.total)
        rate = (step - self.first_step) / max(now - self.t0, 1e-9)
        eta = (self.total - step) / max(rate, 1e-9)
        self.stream.write(f"\r[{'#' * done}{'.' * (self.width - done)}] {step}/{self.total} "
                          f"loss {loss:.4f} | {rate:.1f} it/s | eta {eta:.0f}s ")
        self.stream.flush()

    def message(self, text: str) -> None:
        self.stream.write(("\r\033[K" if self.tty else "") + text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")


def run_title(cfg: TrainConfig, params: int) -> str:
    """A one-line description of a run for plot titles: model, optimizer, schedule, size."""
    model = ", ".join(f"{k}={v}" for k, v in cfg.model.items())
    return (f"{cfg.preset}{f' ({model})' if model else ''} | {cfg.optimizer} lr {cfg.lr:g} "
            f"{cfg.schedule} | {params:,} params | {cfg.dtype}")


def read_metrics(out_dir: str | Path) -> list[dict[str, Any]]:
    """The rows of out_dir/metrics.jsonl (a torn last line from a crash is skipped)."""
    path = Path(out_dir) / "metrics.jsonl"
    rows = []
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    return rows


def _write_text(path: Path, text: str) -> None:
    atomic_write(path, text)
