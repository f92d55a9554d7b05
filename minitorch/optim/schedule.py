"""Learning-rate schedules: constant, and linear warmup then cosine decay to a floor."""

from __future__ import annotations

import math


def constant(step: int, base_lr: float) -> float:
    return base_lr


def warmup_cosine(step: int, base_lr: float, warmup: int, total: int,
                  min_ratio: float = 0.1) -> float:
    """lr at 0-based `step`: base*(step+1)/warmup during warmup, then cosine from base to
    base*min_ratio at step total-1 (and held there after)."""
    if step < warmup:
        return base_lr * (step + 1) / warmup
    decay_steps = max(total - 1 - warmup, 1)
    progress = min((step - warmup) / decay_steps, 1.0)
    floor = base_lr * min_ratio
    return floor + 0.5 * (base_lr - floor) * (1.0 + math.cos(math.pi * progress))


class LRScheduler:
    """Sets every group's lr from fn(step, base_lr) on each step() (call after optimizer.step())."""

    def __init__(self, optimizer, fn, **kwargs):
        self.optimizer, self.fn, self.kwargs = optimizer, fn, kwargs
        self.base_lrs = [g["lr"] for g in optimizer.param_groups]
        self.last_step = 0
        self._apply()

    def _apply(self) -> None:
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = self.fn(self.last_step, base, **self.kwargs)

    def step(self) -> None:
        self.last_step += 1
        self._apply()

    def get_last_lr(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {"last_step": self.last_step, "base_lrs": list(self.base_lrs)}

    def load_state_dict(self, sd: dict) -> None:
        self.last_step, self.base_lrs = int(sd["last_step"]), list(sd["base_lrs"])
        self._apply()
