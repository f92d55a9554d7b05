"""torch.optim.lr_scheduler's base class LRScheduler (torch's initial step at construction,
last_epoch, base_lrs, get_last_lr, state_dict) and the argument checks its schedulers share."""

from __future__ import annotations

import copy
import math
import warnings
from numbers import Integral
from typing import Any

from ..optimizer import Optimizer, _is_real

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available.")
TORCH_ONLY_KEYS = {"_get_lr_called_within_step"}  # torch's warning bookkeeping, not state


def check_int(owner: str, name: str, value: Any, low: int) -> int:
    if not (isinstance(value, Integral) and not isinstance(value, bool) and value >= low):
        raise ValueError(f"{owner}: invalid {name}={value!r}; expected an int >= {low}")
    return int(value)


def check_optimizer(owner: str, optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{owner}: {type(optimizer).__name__} is not an Optimizer")


def per_group(owner: str, name: str, optimizer: Optimizer, value: Any) -> list:
    """value once per param group, or the list/tuple given with one value per group."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{owner}: {name} has {len(value)} values, the optimizer has {n} "
                             "param groups")
        return list(value)
    return [value] * n


class LRScheduler:
    """torch's base: step() advances last_epoch and writes get_lr() into the groups' lr.

    Args:
        optimizer: a minitorch Optimizer; each group's lr at construction becomes its
            "initial_lr" (kept if already set) and base_lrs holds those.
        last_epoch: -1 to start; a value >= 0 resumes (the groups must then hold "initial_lr").
    """

    _unsaved: tuple[str, ...] = ("optimizer",)  # attributes state_dict leaves out or rewrites

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        owner = type(self).__name__
        check_optimizer(owner, optimizer)
        check_int(owner, "last_epoch", last_epoch, -1)
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"{owner}: param 'initial_lr' is not specified in "
                               f"param_groups[{i}] when resuming with last_epoch >= 0")
        self.optimizer = optimizer
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """torch's step at construction (last_epoch -1 -> 0), in initial mode."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The groups' lrs at last_epoch (called by step)."""
        raise NotImplementedError(f"{type(self).__name__} defines no get_lr")

    def get_last_lr(self) -> list[float]:
        """The lrs the last step wrote, one per param group."""
        return list(self._last_lr)

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (call after optimizer.step()); `epoch` (deprecated, as in torch)
        jumps to that epoch with the closed form where the scheduler has one."""
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = check_int(type(self).__name__, "epoch", epoch, 0)
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        self._write_lrs(values)

    def _write_lrs(self, values: list) -> None:
        """Set each group's lr, refusing a non-finite one (torch would write it)."""
        for i, lr in enumerate(values):
            if not (_is_real(lr) and math.isfinite(lr)):
                raise ValueError(f"{type(self).__name__}: the schedule gave lr={lr!r} for param "
                                 f"group {i} at epoch {self.last_epoch}")
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer (torch's keys), copied."""
        return copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in self._unsaved})

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a state_dict of this scheduler type; other keys raise ValueError."""
        sd = {k: v for k, v in state_dict.items() if k not in TORCH_ONLY_KEYS}
        expected = set(self.state_dict())
        if set(sd) != expected:
            raise ValueError(f"{type(self).__name__}.load_state_dict: missing keys "
                             f"{sorted(expected - set(sd))}, unknown keys "
                             f"{sorted(set(sd) - expected)}")
        own = {k: v for k, v in sd.items() if k not in self._unsaved}
        self.__dict__.update(copy.deepcopy(own))
