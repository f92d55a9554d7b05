"""Learning-rate schedules: constant, and linear warmup then cosine decay to a floor; and
LRScheduler, the one path that sets an optimizer's lr from a schedule (the Trainer uses it).

Every argument is checked (finite, in range) with the optimizers' check_hyper, so a bad
schedule fails when it is built, not as a NaN learning rate mid-run.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .optimizer import check_hyper


def _check_steps(owner: str, name: str, value, low: int) -> int:
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= low):
        raise ValueError(f"{owner}: invalid {name}={value!r}; expected an int >= {low}")
    return value


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


def check_warmup_cosine(warmup: int, total: int, min_ratio: float = 0.1) -> None:
    """ValueError naming the first bad warmup_cosine argument."""
    _check_steps("warmup_cosine", "warmup", warmup, 0)
    _check_steps("warmup_cosine", "total", total, 1)
    check_hyper("warmup_cosine", "min_ratio", min_ratio, 0.0, 1.0)


SCHEDULES: dict[str, tuple[Callable[..., float], Callable[..., None] | None]] = {
    "constant": (constant, None),
    "cosine": (warmup_cosine, check_warmup_cosine),
}


class LRScheduler:
    """Sets every group's lr from fn(step, base_lr, **kwargs) on each step() (call after
    optimizer.step()); lr_at(step) is the same function for any step, so a logged or evaluated
    lr and the applied one never disagree.

    Args:
        optimizer: its groups' current lr values are the base lrs.
        fn: a schedule (constant, warmup_cosine) or its name in SCHEDULES.
        **kwargs: the schedule's other arguments (checked when the schedule is named or known).
    """

    def __init__(self, optimizer, fn: Callable[..., float] | str, **kwargs):
        if isinstance(fn, str):
            if fn not in SCHEDULES:
                raise ValueError(f"unknown schedule {fn!r}; known: {sorted(SCHEDULES)}")
            fn = SCHEDULES[fn][0]
        for known, check in SCHEDULES.values():
            if fn is known and check is not None:
                check(**kwargs)
        self.optimizer, self.fn, self.kwargs = optimizer, fn, kwargs
        self.base_lrs = [check_hyper("LRScheduler", "base lr", g["lr"])
                         for g in optimizer.param_groups]
        self.last_step = 0
        self._apply()

    def lr_at(self, step: int, group: int = 0) -> float:
        """The lr the schedule gives group `group` at 0-based `step`."""
        return self.fn(step, self.base_lrs[group], **self.kwargs)

    def _apply(self) -> None:
        for i, group in enumerate(self.optimizer.param_groups):
            group["lr"] = self.lr_at(self.last_step, i)

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
