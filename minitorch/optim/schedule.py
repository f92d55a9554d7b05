"""Learning-rate schedules: constant, and linear warmup then cosine decay to a floor; and
ScheduleLR, a torch lr_scheduler that applies one of them (the Trainer's one lr path).

Every argument is checked (finite, in range) with the optimizers' check_hyper, so a bad
schedule fails when it is built, not as a NaN learning rate mid-run.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .lr_scheduler import LRScheduler
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


class ScheduleLR(LRScheduler):
    """A torch scheduler whose lr is a closed form of the epoch: lr = fn(epoch, base_lr,
    **kwargs) for each group (the Trainer's schedule). lr_at(step) is the same function for
    any step, so a logged or evaluated lr and the applied one never disagree.

    Args:
        optimizer: its groups' "initial_lr" (their lr when the first scheduler was built) are
            the base lrs.
        fn: a schedule (constant, warmup_cosine, or any fn(step, base_lr, **kwargs)) or its name
            in SCHEDULES.
        last_epoch: as lr_scheduler.LRScheduler: -1 to start, S - 1 to resume after S steps.
        **kwargs: the schedule's other arguments (checked when the schedule is named or known).
    """

    _unsaved = ("optimizer", "fn")

    def __init__(self, optimizer, fn: Callable[..., float] | str, last_epoch: int = -1,
                 **kwargs) -> None:
        if isinstance(fn, str):
            if fn not in SCHEDULES:
                raise ValueError(f"unknown schedule {fn!r}; known: {sorted(SCHEDULES)}")
            fn = SCHEDULES[fn][0]
        for known, check in SCHEDULES.values():
            if fn is known and check is not None:
                check(**kwargs)
        self.fn, self.kwargs = fn, kwargs
        super().__init__(optimizer, last_epoch)

    def lr_at(self, step: int, group: int = 0) -> float:
        """The lr the schedule gives group `group` at 0-based `step`."""
        return self.fn(step, self.base_lrs[group], **self.kwargs)

    def get_lr(self) -> list[float]:
        return [self.lr_at(self.last_epoch, i) for i in range(len(self.base_lrs))]

    _get_closed_form_lr = get_lr
