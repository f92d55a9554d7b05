"""The training loop: tokenizer, model, optimizer and schedule from a TrainConfig, then steps with
periodic evaluation, metrics, samples, a loss plot and atomic checkpoints.

Every random draw comes from generators seeded by cfg.seed whose states are checkpointed, so a
run is reproducible and a resumed run is bit-identical to an uninterrupted one. The run folder
is locked for the whole run (run_dir.hold_run). A non-finite loss, gradient or weight stops the
run (or skips the step) naming the step and the first op that produced it; no checkpoint with a
non-finite value is ever written. Sampling is passed in (`sampler`), so train does not import
generate.

Under MPI (see minitorch.distributed) every rank runs this same loop on its rows of the global
batch: gradients and losses are averaged over ranks, rank 0 alone writes files and holds the
lock, and the replicas' weights are checksummed every cfg.sync_check steps and before every
checkpoint. Errors that can happen on one rank only are agreed on, so every rank stops together.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ..data import Corpus, build_tokenizer, get_batch, load_tokenizer
from ..distributed import Local, shard
from ..engine import Generator, detect_anomaly, no_grad
from ..io import (
    Checkpoint,
    CheckpointError,
    atomic_write,
    check_model_size,
    load_checkpoint,
    save_checkpoint,
    token_splits,
)
from ..models.gpt import GPT
from ..optim import Adam, AdamW, ScheduleLR, clip_grad_norm_
from ..parallel import DataParallel
from . import history, signals
from .config import ConfigError, TrainConfig, apply_overrides
from .consensus import check_same, code_version
from .plot import plot_metrics
from .progress import ProgressBar
from .run_dir import check_fresh, check_own_checkpoint, hold_run

# Keys a resumed run may change; everything else must match the checkpoint's config.
RESUMABLE_KEYS = ("iters", "eval_interval", "ckpt_interval", "sample_tokens", "plot", "out_dir",
                  "on_nonfinite", "keep_last", "sync_check", "workers",
                  "replay")
DTYPES = {"float32": np.float32, "float64": np.float64}
HISTORY = history.HISTORY  # <run>/checkpoints/step-XXXXXXXX/ and <run>/checkpoints/best/
# sampler(model, prompt ids (T,), max_new_tokens, rng=Generator) -> ids (T + max_new_tokens,),
# e.g. minitorch.generate.generate
Sampler = Callable[..., np.ndarray]


class TrainingDiverged(RuntimeError):
    """A non-finite loss, gradient or weight; the message names the step and the first op.
    Raised from Trainer.train, it carries saved_step: the step of the checkpoint left intact
    (None if none was written)."""

    saved_step: int | None = None


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


def build_scheduler(cfg: TrainConfig, optimizer, step: int = 0) -> ScheduleLR:
    """The run's schedule as optim's ScheduleLR (the only place an lr is computed), at `step`
    (steps already taken: a resumed run's; torch's last_epoch = step - 1)."""
    if cfg.schedule == "cosine":
        return ScheduleLR(optimizer, "cosine", step - 1, warmup=cfg.warmup, total=cfg.iters,
                          min_ratio=cfg.min_lr_ratio)
    return ScheduleLR(optimizer, "constant", step - 1)


class Trainer:
    """Builds everything a run needs from `cfg`; `checkpoint` (see Trainer.resume) restores it.

    Args:
        cfg: the resolved run config.
        checkpoint: state to continue from (already validated), or None for a fresh run.
        stream: where the progress bar and evaluation lines go.
        sampler: draws the text samples taken before and after training (e.g.
            minitorch.generate.generate); None takes no samples.
        overwrite: a fresh run may replace a run already in cfg.out_dir (else ConfigError).
        dist: the communicator (minitorch.distributed.world()); None = one process. Every rank
            constructs the Trainer with the same arguments.
    """

    def __init__(self, cfg: TrainConfig, checkpoint: Checkpoint | None = None,
                 stream: TextIO | None = None, sampler: Sampler | None = None,
                 overwrite: bool = False, dist: Local | None = None):
        self.cfg, self.out = cfg, Path(cfg.out_dir)
        self.dist = dist = dist or Local()
        self.stream = stream or sys.stderr
        self.sampler, self.overwrite, self.resumed = sampler, overwrite, checkpoint is not None
        if cfg.batch_size % dist.size:
            raise ConfigError(f"batch_size {cfg.batch_size} (the global batch) does not divide "
                              f"among {dist.size} ranks; use a multiple of {dist.size}")
        check_same(dist, {"the minitorch code (sha256 of its source)": code_version(),
                          **{f"config key {k}": v for k, v in cfg.to_dict().items()}},
                   "every rank must train the same run")
        # checked and hashed in blocks, never held whole; on every rank (each reads its rows)
        corpus = dist.agree(lambda: Corpus.open(cfg.data))
        self.corpus_sha256 = corpus.sha256
        check_same(dist, {"the corpus (sha256)": corpus.sha256},
                   f"every rank must read the same --data ({cfg.data or 'the embedded corpus'})")
        if checkpoint is not None:
            if checkpoint.extra.get("corpus_sha256") != self.corpus_sha256:
                raise ConfigError(f"the corpus ({cfg.data or 'embedded default'}) differs from "
                                  "the one this checkpoint was trained on")
            self.tokenizer = load_tokenizer(checkpoint.tokenizer)
        else:  # built once, on rank 0, and sent to the others
            tok = dist.agree(lambda: build_tokenizer(cfg.tokenizer, corpus, cfg.vocab_size),
                             root_only=True)
            spec = dist.bcast(tok.to_dict() if dist.is_root else None)
            self.tokenizer = tok if dist.is_root else load_tokenizer(spec)
        self.model_config = cfg.model_config(self.tokenizer.vocab_size)
        T = self.model_config.block_size
        try:  # refuse a config too large to build before allocating anything
            check_model_size(self.model_config, DTYPES[cfg.dtype])
        except ValueError as e:
            raise ConfigError(str(e)) from None
        # memmaps of a token file in the run: rank 0 encodes it, then the others open it (or
        # encode their own where the run folder is not shared)
        splits = lambda: token_splits(corpus, self.tokenizer, self.out, T)  # noqa: E731
        dist.agree(lambda: self._holding(splits), root_only=True)
        self.train_data, self.val_data = dist.agree(splits)
        self.generator = Generator(cfg.seed)  # minitorch's random source: weight init
        self.model = GPT(self.model_config, generator=self.generator, dtype=DTYPES[cfg.dtype])
        self.optimizer = build_optimizer(cfg, self.model)
        self.scheduler = build_scheduler(cfg, self.optimizer)
        data_seed, eval_seed, self.sample_seed = np.random.SeedSequence(cfg.seed).spawn(3)
        # training batches, continues on resume; every rank draws the same global batch and
        # takes rows [lo, hi) of it, so the batch does not depend on the number of ranks
        self.data_rng = np.random.default_rng(data_seed)
        self.rows = shard(cfg.batch_size, dist.rank, dist.size)
        self.parallel = DataParallel(self.threads(), replay=cfg.replay)
        eval_rng = np.random.default_rng(eval_seed)  # the same eval batches at every evaluation
        # each rank evaluates every size-th batch (from its rank on); evaluate() weights by count
        self.eval_batches = {
            split: [b for i, b in enumerate(get_batch(data, cfg.batch_size, T, eval_rng)
                                            for _ in range(cfg.eval_iters))
                    if i % dist.size == dist.rank]
            for split, data in (("train", self.train_data), ("val", self.val_data))
        }
        self.step, self.elapsed = 0, 0.0
        self.best: dict[str, Any] | None = None  # {"step", "val"} of the best/ checkpoint
        self.saved_step: int | None = None  # step of the latest checkpoint in out_dir
        self.history_due = False  # the latest checkpoint belongs in checkpoints/step-N too
        if checkpoint is not None:
            self._restore(checkpoint)
        dist.sync_params(self.model.parameters())  # every rank starts from rank 0's weights

    def _holding(self, work: Callable[[], Any]) -> Any:
        """work() holding the run folder (as the CLI already does): the token file is written by
        its owner, and a corpus too short for the run leaves no folder behind (hold_run)."""
        with hold_run(self.out):
            return work()

    def threads(self) -> int:
        """Worker threads per step: cfg.workers, or with 0 one per core this process may use
        (1 under MPI: the ranks already use the cores), never more than this rank's rows."""
        n = self.cfg.workers
        if n == 0:
            n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
                os.cpu_count() or 1)
            n = n if self.dist.size == 1 else 1
        return max(1, min(n, self.rows[1] - self.rows[0]))

    @classmethod
    def resume(cls, out_dir: str | Path, overrides: dict[str, Any] | None = None,
               stream: TextIO | None = None, sampler: Sampler | None = None,
               dist: Local | None = None) -> Trainer:
        """Continue the run saved in out_dir. Only RESUMABLE_KEYS may differ from its config;
        a bad checkpoint raises CheckpointError before anything is written. Under MPI rank 0
        reads the checkpoint and sends it to the others (any number of ranks that divides the
        global batch)."""
        dist = dist or Local()

        def load() -> Checkpoint:  # this folder's own run's checkpoint, fully validated
            ckpt = load_checkpoint(out_dir)
            check_own_checkpoint(out_dir, ckpt.config, RESUMABLE_KEYS)
            return ckpt

        ckpt = dist.bcast(dist.agree(load, root_only=True))
        try:
            saved = TrainConfig.from_dict(ckpt.config)
        except ConfigError as e:
            raise CheckpointError(f"checkpoint at {out_dir} has an invalid run config: {e}") \
                from None
        cfg = apply_overrides(saved, overrides or {})
        changed = [f.name for f in dataclasses.fields(TrainConfig)
                   if getattr(cfg, f.name) != getattr(saved, f.name)
                   and f.name not in RESUMABLE_KEYS]
        if changed:
            raise ConfigError(f"--resume continues the saved run; these keys differ from its "
                              f"config: {changed}")
        return cls(cfg.replace(out_dir=str(out_dir)), ckpt, stream, sampler, dist=dist)

    def _restore(self, ckpt: Checkpoint) -> None:
        """Load every part of the checkpoint into this trainer; a part whose content does not
        fit raises CheckpointError naming it (nothing is written)."""
        parts = [("model", lambda: self.model.load_state_dict(ckpt.model)),
                 ("optimizer", lambda: self.optimizer.load_state_dict(ckpt.optimizer)),
                 ("rng", lambda: self._restore_rng(ckpt.rng)),
                 ("extra", lambda: self._restore_extra(ckpt.extra))]
        for name, load in parts:
            try:
                load()
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
                raise CheckpointError(f"checkpoint part '{name}' does not fit this run: "
                                      f"{type(e).__name__}: {e}") from None
        self.step = self.saved_step = ckpt.step
        self.scheduler = build_scheduler(self.cfg, self.optimizer, self.step)

    def _restore_rng(self, rng: dict) -> None:
        self.data_rng.bit_generator.state = rng["data"]
        self.generator.set_state(rng["generator"])

    def _restore_extra(self, extra: dict) -> None:
        elapsed = extra.get("elapsed", 0.0)
        if not (_real(elapsed) and math.isfinite(elapsed) and elapsed >= 0):
            raise ValueError(f"extra.elapsed must be a finite number >= 0, got {elapsed!r}")
        best = extra.get("best")
        if best is not None and not (isinstance(best, dict) and _real(best.get("val"))
                                     and isinstance(best.get("step"), int)):
            raise ValueError(f"extra.best must be {{'step': int, 'val': number}}, got {best!r}")
        self.elapsed, self.best = float(elapsed), best
        self.history_due = extra.get("history") is True  # its checkpoints/step-N copy

    # -- one step, evaluation, samples -------------------------------------------------------

    def train_step(self) -> dict[str, Any]:
        """One optimizer step on a fresh batch; returns the row logged for it.

        A non-finite loss or gradient raises TrainingDiverged (on_nonfinite="stop") or skips
        the update (on_nonfinite="skip"; the row says so); an update that leaves a non-finite
        weight always raises.
        """
        cfg, step = self.cfg, self.step
        lr = self.scheduler.lr_at(step)
        lo, hi = self.rows
        x, y = get_batch(self.train_data, cfg.batch_size, self.model_config.block_size,
                         self.data_rng)  # (B, T) each: the global batch, the same on every rank
        x, y = x[lo:hi], y[lo:hi]  # (B/N, T): this rank's rows
        self.optimizer.zero_grad()
        with np.errstate(all="ignore"):  # non-finite values are checked below, by name
            # this rank's mean loss and its gradients, its rows split among cfg.workers threads
            # (each replaying its captured step with cfg.replay)
            loss = self.parallel.backward(lambda xs, ys: self.model(xs, ys)[1], x, y)
            # the global mean loss and gradients: each rank's mean weighted by its share
            value = self.dist.average_step(self.model.parameters(), loss,
                                           (hi - lo) / cfg.batch_size)
        row: dict[str, Any] = {"kind": "step", "step": step, "loss": value, "lr": lr}
        if not math.isfinite(value):
            bad: str | None = f"the loss is {value}"
        else:
            grad = self._nonfinite_grad()
            bad = None if grad is None else f"the {grad} is non-finite (loss {value:.4g})"
        if bad is not None:
            reason = f"step {step}: {bad}; {self._first_bad_op(x, y)}"
            if cfg.on_nonfinite == "stop":
                raise TrainingDiverged(f"training diverged at {reason}")
            self.optimizer.zero_grad()
            self.scheduler.step()
            self.step += 1
            return {**row, "loss": None, "skipped": reason}
        if cfg.grad_clip > 0:
            row["grad_norm"] = clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
        with np.errstate(all="ignore"):
            self.optimizer.step()
        weight = self._nonfinite(self.model.named_parameters(), lambda p: p.data)
        if weight is not None:
            raise TrainingDiverged(f"training diverged at step {step}: the update made {weight} "
                                   f"non-finite (lr {lr:g})")
        self.scheduler.step()
        self.step += 1
        return row

    @staticmethod
    def _nonfinite(named, get) -> str | None:
        """The name of the first item whose array has a nan or inf, else None."""
        for name, p in named:
            arr = get(p)
            if arr is not None and not np.isfinite(arr).all():
                return name
        return None

    def _nonfinite_grad(self) -> str | None:
        name = self._nonfinite(self.model.named_parameters(),
                               lambda p: None if p.grad is None else p.grad.data)
        return None if name is None else f"gradient of {name}"

    def _first_bad_op(self, x: np.ndarray | None, y: np.ndarray | None = None) -> str:
        """Rerun the batch under anomaly mode on every rank; the first op whose forward or
        backward produced nan/inf (on the lowest rank that found one), as a phrase (gradients
        are cleared afterwards). A collective: every rank calls it (x None: no batch here)."""
        found = self._local_bad_op(x, y)
        if self.dist.size == 1:
            return found
        named = [(r, f) for r, f in enumerate(self.dist.allgather(found))
                 if f.startswith("first")]
        return f"rank {named[0][0]}: {named[0][1]}" if named else found

    def _local_bad_op(self, x: np.ndarray | None, y: np.ndarray | None = None) -> str:
        if x is None:
            return "rerun under anomaly mode, no op produced a non-finite value"
        self.optimizer.zero_grad()
        try:
            with detect_anomaly(), np.errstate(all="ignore"):
                if y is None:
                    with no_grad():
                        self.model(x)
                else:
                    self.model(x, y)[1].backward()
        except FloatingPointError as e:
            return f"first non-finite op: {str(e).removeprefix('anomaly: ')}"
        finally:
            self.optimizer.zero_grad()
        return "rerun under anomaly mode, no op produced a non-finite value"

    def evaluate(self) -> dict[str, float]:
        """Mean loss over the fixed eval batches of each split, without building a graph (under
        MPI each rank takes its batches and the means are weighted by batch count)."""
        self.model.eval()
        out = {}
        with no_grad(), np.errstate(all="ignore"):
            for split, batches in self.eval_batches.items():
                losses = [self.model(x, y)[1].item() for x, y in batches]
                out[split] = (float(np.mean(losses)) if self.dist.size == 1 else
                              self.dist.mean(math.fsum(losses), len(losses)))
        self.model.train()
        return out

    def sample(self, tokens: int | None = None) -> str | None:
        """A seeded sample (same seed every call) that starts from a newline when it can;
        None without a sampler."""
        if self.sampler is None:
            return None
        n = self.cfg.sample_tokens if tokens is None else tokens
        try:
            prompt = self.tokenizer.encode("\n")
        except ValueError:
            prompt = [0]
        ids = self.sampler(self.model, prompt, n, rng=np.random.default_rng(self.sample_seed))
        return self.tokenizer.decode(ids[len(prompt):])

    def checkpoint(self, history: bool = False) -> Checkpoint:
        """The run's full state now (copies), ready for save_checkpoint; `history` marks a
        checkpoint that is also copied to checkpoints/step-N (a resume redoes a lost copy)."""
        rng = {"data": self.data_rng.bit_generator.state, "generator": self.generator.get_state()}
        return Checkpoint(
            step=self.step, model=self.model.state_dict(), optimizer=self.optimizer.state_dict(),
            rng=rng,
            config=self.cfg.to_dict(), model_config=dataclasses.asdict(self.model_config),
            tokenizer=self.tokenizer.to_dict(),
            extra={"corpus_sha256": self.corpus_sha256, "elapsed": self.elapsed,
                   "params": self.model.num_parameters(), "best": self.best,
                   "history": history},
        )

    def save(self, folder: str | Path, history: bool = False) -> Path:
        """save_checkpoint(folder, self.checkpoint(history)), refused (TrainingDiverged,
        nothing written) if any weight or optimizer array is non-finite."""
        ckpt = self.checkpoint(history)
        arrays = [(f"weight {k}", v) for k, v in ckpt.model.items()]
        arrays += [(f"optimizer state {i}.{k}", v) for i, st in ckpt.optimizer["state"].items()
                   for k, v in st.items() if isinstance(v, np.ndarray)]
        bad = self._nonfinite(arrays, lambda v: v)
        if bad is not None:
            raise TrainingDiverged(f"refusing to write a checkpoint at step {self.step}: {bad} "
                                   "is non-finite")
        return save_checkpoint(folder, ckpt)

    # -- the run ------------------------------------------------------------------------------

    def train(self, until: int | None = None) -> dict[str, Any]:
        """Run steps up to `until` (default: cfg.iters), checkpointing as configured.

        Holds the run folder's lock throughout. Stopping early (until < iters) leaves a
        checkpoint that Trainer.resume continues; a run already at `until` writes nothing.
        Returns a summary: step, last evaluation, elapsed seconds, params, out_dir.
        """
        cfg, out, dist = self.cfg, self.out, self.dist
        stop = cfg.iters if until is None else min(until, cfg.iters)
        with contextlib.ExitStack() as held:  # the lock: rank 0's, for every rank
            dist.agree(lambda: held.enter_context(hold_run(out)), root_only=True)
            if self.resumed and self.history_due and cfg.keep_last:  # a copy a kill lost
                dist.agree(lambda: history.keep(out, self.step, cfg.keep_last, True),
                           root_only=True)
            if self.step >= stop:
                if self.step >= cfg.iters and not self.finished():  # killed before finishing
                    dist.agree(self._finish, root_only=True)
                return self._summary({})
            if self.step == 0 and not self.resumed:
                dist.agree(lambda: check_fresh(out, self.overwrite), root_only=True)
            dist.agree(self._start_files, root_only=True)
            last_eval = self._loop(stop)
            if self.step == cfg.iters:
                dist.agree(self._finish, root_only=True)
        return self._summary(last_eval)

    def finished(self) -> bool:
        """True if the after-training steps (sample, plot) ran at this step: the last
        metrics row says so (read on rank 0; a collective)."""
        done = None
        if self.dist.is_root:
            rows = read_metrics(self.out)
            done = bool(rows) and rows[-1] == {"kind": "finished", "step": self.step}
        return bool(self.dist.bcast(done))

    def _loop(self, stop: int) -> dict[str, Any]:
        cfg, out, dist = self.cfg, self.out, self.dist
        # rank 0 alone writes metrics and progress
        path, stream = ((out / "metrics.jsonl", self.stream) if dist.is_root else
                        (Path(os.devnull), open(os.devnull, "w")))  # noqa: SIM115
        bar = ProgressBar(cfg.iters, stream, cfg.batch_size * self.model_config.block_size)
        last_eval: dict[str, Any] = {}
        with open(path, "a") as metrics, (contextlib.nullcontext() if dist.is_root else stream), \
                signals.deferred():  # a signal stops the run at the next step boundary
            try:
                while self.step < stop:
                    s, t0 = self.step, time.perf_counter()
                    if s % cfg.eval_interval == 0 or s == cfg.iters - 1:
                        last_eval = self._eval_row(s)
                        metrics.write(json.dumps(last_eval) + "\n")
                        metrics.flush()
                        bar.message(f"step {s:>5}/{cfg.iters} | train {last_eval['train']:.4f} | "
                                    f"val {last_eval['val']:.4f} | lr {last_eval['lr']:.2e} | "
                                    f"{self.elapsed:.1f}s")
                    row = self.train_step()
                    metrics.write(json.dumps(row) + "\n")
                    if "skipped" in row:
                        bar.message(f"skipped the update of {row['skipped']}")
                    self.elapsed += time.perf_counter() - t0
                    bar.update(self.step, row["loss"])
                    periodic = cfg.ckpt_interval and self.step % cfg.ckpt_interval == 0
                    if periodic or self.step == stop:
                        metrics.flush()
                        dist.check_replicas(self.model.parameters(), self.step)
                        dist.agree(lambda p=periodic: self._save_latest(p), root_only=True)
                        self.saved_step = self.step
                    elif cfg.sync_check and self.step % cfg.sync_check == 0:
                        dist.check_replicas(self.model.parameters(), self.step)
                    if self._stop_signal() is not None:
                        metrics.flush()
                        self._stop_here()
            except TrainingDiverged as e:
                e.saved_step = self.saved_step  # the checkpoint a resume would continue from
                metrics.write(json.dumps({"kind": "diverged", "step": self.step,
                                          "reason": str(e)}) + "\n")
                raise
            finally:
                bar.close()
        return last_eval

    def _stop_signal(self) -> int | None:
        """The signal asking the run to stop, on any rank (under MPI a collective per step,
        so every rank stops at the same boundary)."""
        sig = signals.pending()
        if self.dist.size > 1:
            sig = next((s for s in self.dist.allgather(sig) if s is not None), None)
        return sig

    def _stop_here(self) -> None:
        """Checkpoint this step (unless just done) and raise signals.Interrupted."""
        if self.saved_step != self.step:
            self.dist.check_replicas(self.model.parameters(), self.step)
            self.dist.agree(lambda: self._save_latest(False), root_only=True)
            self.saved_step = self.step
        raise signals.Interrupted(self._stop_signal(), self.step, self.saved_step,
                                  str(self.out / "checkpoint.json"))

    def _save_latest(self, periodic: bool) -> None:
        """The run's checkpoint, and its copy in the history when periodic (rank 0 only)."""
        due = periodic and self.cfg.keep_last > 0
        self.save(self.out, history=due)
        if due:
            history.keep(self.out, self.step, self.cfg.keep_last)

    def _eval_row(self, s: int) -> dict[str, Any]:
        """Evaluate at step s; a new lowest val loss is saved to checkpoints/best/ (when
        periodic checkpoints are on); a non-finite loss raises TrainingDiverged."""
        ev = self.evaluate()
        if not all(math.isfinite(v) for v in ev.values()):
            val = self.eval_batches["val"]
            where = self._first_bad_op(val[0][0] if val else None)
            raise TrainingDiverged(f"training diverged at step {s}: evaluation loss is "
                                   f"non-finite ({ev}); {where}")
        if self.cfg.ckpt_interval and (self.best is None or ev["val"] < self.best["val"]):
            self.best = {"step": s, "val": ev["val"]}
            self.dist.check_replicas(self.model.parameters(), s)
            self.dist.agree(lambda: self.save(self.out / HISTORY / "best"), root_only=True)
        return {"kind": "eval", "step": s, **ev, "lr": self.scheduler.lr_at(s),
                "time": round(self.elapsed, 3)}

    def _summary(self, last_eval: dict[str, Any]) -> dict[str, Any]:
        return {"step": self.step, "eval": last_eval, "elapsed": self.elapsed,
                "params": self.model.num_parameters(), "out_dir": str(self.out)}

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
            if self.sampler is not None:
                _write_text(out / "samples.json", json.dumps({"before": {
                    "step": 0, "text": self.sample()}}, indent=1))
        else:
            rows = [r for r in read_metrics(out) if r.get("step", 0) < self.step]
            _write_text(metrics, "".join(json.dumps(r) + "\n" for r in rows))

    def _finish(self) -> None:
        out = self.out
        if self.sampler is not None:
            path = out / "samples.json"
            samples = json.loads(path.read_text()) if path.is_file() else {}
            samples["after"] = {"step": self.step, "text": self.sample()}
            _write_text(path, json.dumps(samples, indent=1))
        if self.cfg.plot:
            title = run_title(self.cfg, self.model.num_parameters())
            self.stream.write(plot_metrics(read_metrics(out), out / "loss.png", title=title) + "\n")
        # last: a run killed before this line finishes these steps on --resume
        rows = [r for r in read_metrics(out) if r.get("kind") != "finished"]
        rows.append({"kind": "finished", "step": self.step})
        _write_text(out / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in rows))


def _real(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def run_title(cfg: TrainConfig, params: int) -> str:
    """A one-line description of a run for plot titles: model, optimizer, schedule, size."""
    model = ", ".join(f"{k}={v}" for k, v in cfg.model.items())
    return (f"{cfg.preset}{f' ({model})' if model else ''} | {cfg.optimizer} lr {cfg.lr:g} "
            f"{cfg.schedule} | {params:,} params | {cfg.dtype}")


def read_metrics(out_dir: str | Path, strict: bool = False) -> list[dict[str, Any]]:
    """The rows of out_dir/metrics.jsonl. A line that is not a JSON object (a torn line from a
    crash, undecodable bytes) is skipped, or with strict raises ValueError naming its number."""
    path = Path(out_dir) / "metrics.jsonl"
    rows = []
    if path.is_file():
        for i, line in enumerate(path.read_bytes().splitlines(), 1):
            try:
                row = json.loads(line.decode())  # UnicodeDecodeError is a ValueError
            except (ValueError, RecursionError) as e:
                row = e
            if isinstance(row, dict):
                rows.append(row)
            elif strict and line.strip():
                why = f": {row}" if isinstance(row, Exception) else ""
                raise ValueError(f"line {i} is not a JSON object{why}")
    return rows


def _write_text(path: Path, text: str) -> None:
    atomic_write(path, text)
