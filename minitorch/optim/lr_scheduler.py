"""torch.optim.lr_scheduler for minitorch optimizers, step by step as torch 2.13: each step() sets
every group's lr, most schedulers from the group's current lr (so they chain, as torch's do), with
torch's initial step at construction, last_epoch, base_lrs, get_last_lr and state_dict.

Arguments are checked when a scheduler is built and a schedule never writes a non-finite lr.
This module's LRScheduler is torch's base class (also minitorch.optim.LRScheduler); the
Trainer's schedule (schedule.ScheduleLR) is one of its subclasses. No torch import.
"""

from __future__ import annotations

import copy
import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from numbers import Integral
from typing import Any

from .optimizer import Optimizer, _is_real, check_hyper

__all__ = ["ConstantLR", "CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR",
           "LinearLR", "MultiStepLR", "MultiplicativeLR", "OneCycleLR", "ReduceLROnPlateau",
           "SequentialLR", "StepLR"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available.")
_TORCH_ONLY_KEYS = {"_get_lr_called_within_step"}  # torch's warning bookkeeping, not state


def _check_int(owner: str, name: str, value: Any, low: int) -> int:
    if not (isinstance(value, Integral) and not isinstance(value, bool) and value >= low):
        raise ValueError(f"{owner}: invalid {name}={value!r}; expected an int >= {low}")
    return int(value)


def _check_optimizer(owner: str, optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{owner}: {type(optimizer).__name__} is not an Optimizer")


def _per_group(owner: str, name: str, optimizer: Optimizer, value: Any) -> list:
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
        _check_optimizer(owner, optimizer)
        _check_int(owner, "last_epoch", last_epoch, -1)
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
            self.last_epoch = _check_int(type(self).__name__, "epoch", epoch, 0)
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
        sd = {k: v for k, v in state_dict.items() if k not in _TORCH_ONLY_KEYS}
        expected = set(self.state_dict())
        if set(sd) != expected:
            raise ValueError(f"{type(self).__name__}.load_state_dict: missing keys "
                             f"{sorted(expected - set(sd))}, unknown keys "
                             f"{sorted(set(sd) - expected)}")
        own = {k: v for k, v in sd.items() if k not in self._unsaved}
        self.__dict__.update(copy.deepcopy(own))


class _Lambdas(LRScheduler):
    """The lr_lambda handling LambdaLR and MultiplicativeLR share (torch's state_dict keeps a
    callable object's __dict__, and None for a plain function or lambda)."""

    _unsaved = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1) -> None:
        owner = type(self).__name__
        _check_optimizer(owner, optimizer)
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"{owner}: expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"{owner}: lr_lambda should be a function, but got "
                                f"{type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        sd = super().state_dict()
        sd["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                            for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        for fn, saved in zip(self.lr_lambdas, state_dict["lr_lambdas"], strict=True):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_Lambdas):
    """lr = base_lr * lr_lambda(epoch).

    Args:
        optimizer: the optimizer whose groups' lr are set.
        lr_lambda: f(epoch) -> factor, or a list with one such function per param group.
        last_epoch: see LRScheduler.
    """

    def get_lr(self) -> list[float]:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_Lambdas):
    """lr *= lr_lambda(epoch) at every step after the first (arguments as LambdaLR)."""

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [g["lr"] for g in groups]
        return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, groups)]


class StepLR(LRScheduler):
    """lr *= gamma every step_size epochs (base_lr * gamma**(epoch // step_size)).

    Args:
        optimizer: as LRScheduler.
        step_size: the period, an int >= 1.
        gamma: the decay factor, finite and >= 0.
        last_epoch: as LRScheduler.
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size = _check_int("StepLR", "step_size", step_size, 1)
        self.gamma = check_hyper("StepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [g["lr"] for g in groups]
        return [g["lr"] * self.gamma for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr *= gamma at each milestone epoch (gamma**n for a milestone listed n times).

    Args:
        optimizer: as LRScheduler.
        milestones: epochs (ints >= 0), in any order.
        gamma: the decay factor, finite and >= 0.
        last_epoch: as LRScheduler.
    """

    def __init__(self, optimizer: Optimizer, milestones, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        milestones = list(milestones)
        for m in milestones:
            _check_int("MultiStepLR", "milestone", m, 0)
        self.milestones = Counter(int(m) for m in milestones)
        self.gamma = check_hyper("MultiStepLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self.last_epoch not in self.milestones:
            return [g["lr"] for g in groups]
        return [g["lr"] * self.gamma ** self.milestones[self.last_epoch] for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma ** passed for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr = base_lr * factor for epochs < total_iters, then base_lr.

    Args:
        optimizer: as LRScheduler.
        factor: in (0, 1] (torch also takes 0, then divides by it at total_iters).
        total_iters: an int >= 0.
        last_epoch: as LRScheduler.
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        self.factor = check_hyper("ConstantLR", "factor", factor, 0.0, 1.0, low_open=True)
        self.total_iters = _check_int("ConstantLR", "total_iters", total_iters, 0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in groups]
        if self.last_epoch != self.total_iters:
            return [g["lr"] for g in groups]
        return [g["lr"] * (1.0 / self.factor) for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base in self.base_lrs]


class LinearLR(LRScheduler):
    """lr factor linear from start_factor at epoch 0 to end_factor at total_iters, then held.

    Args:
        optimizer: as LRScheduler.
        start_factor: in (0, 1].
        end_factor: in [0, 1].
        total_iters: an int >= 1.
        last_epoch: as LRScheduler.
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        self.start_factor = check_hyper("LinearLR", "start_factor", start_factor, 0.0, 1.0,
                                        low_open=True)
        self.end_factor = check_hyper("LinearLR", "end_factor", end_factor, 0.0, 1.0)
        self.total_iters = _check_int("LinearLR", "total_iters", total_iters, 1)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return [g["lr"] for g in groups]
        span = self.end_factor - self.start_factor
        ratio = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return [g["lr"] * ratio for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * done)
                for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr *= gamma every epoch (base_lr * gamma**epoch).

    Args:
        optimizer: as LRScheduler.
        gamma: the factor, finite and >= 0 (> 1 grows the lr).
        last_epoch: as LRScheduler.
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = check_hyper("ExponentialLR", "gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [g["lr"] for g in groups]
        return [g["lr"] * self.gamma for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2, computed
    recursively from the current lr as torch does (so past T_max it rises again, period 2*T_max).

    Args:
        optimizer: as LRScheduler.
        T_max: half the period, an int >= 1.
        eta_min: the lowest lr, finite and >= 0.
        last_epoch: as LRScheduler.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        self.T_max = _check_int("CosineAnnealingLR", "T_max", T_max, 1)
        self.eta_min = check_hyper("CosineAnnealingLR", "eta_min", eta_min)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups, t, T, low = self.optimizer.param_groups, self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return [g["lr"] for g in groups]
        if self._step_count == 1 and t > 0:
            return [low + (base - low) * (1 + math.cos(t * math.pi / T)) / 2
                    for base in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:  # leaving the trough: the ratio below would divide by 0
            return [g["lr"] + (base - low) * (1 - math.cos(math.pi / T)) / 2
                    for base, g in zip(self.base_lrs, groups)]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (g["lr"] - low) + low for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


class SequentialLR(LRScheduler):
    """Runs schedulers[i] between milestones[i-1] and milestones[i]; at a milestone the next one
    restarts at its epoch 0. Like torch, it has no base_lrs of its own.

    Args:
        optimizer: the optimizer every scheduler was built on.
        schedulers: the schedulers (not ReduceLROnPlateau), built just before.
        milestones: len(schedulers) - 1 non-decreasing ints.
        last_epoch: as LRScheduler.
    """

    _unsaved = ("optimizer", "_schedulers")

    def __init__(self, optimizer: Optimizer, schedulers: list, milestones: list[int],
                 last_epoch: int = -1) -> None:
        owner = "SequentialLR"
        _check_optimizer(owner, optimizer)
        _check_int(owner, "last_epoch", last_epoch, -1)
        schedulers, milestones = list(schedulers), list(milestones)
        if not schedulers:
            raise ValueError(f"{owner} expects at least one scheduler, but got none")
        for i, s in enumerate(schedulers):
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"{owner} does not support ReduceLROnPlateau (index {i}): its "
                                 "step needs a metric")
            if not isinstance(s, LRScheduler):
                raise TypeError(f"{owner}: schedulers[{i}] is a {type(s).__name__}, not an "
                                "LRScheduler")
            if s.optimizer is not optimizer:
                raise ValueError(f"{owner} expects all schedulers to belong to the same "
                                 f"optimizer, but schedulers[{i}] ({type(s).__name__}) has "
                                 "another")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"{owner} expects one milestone fewer than schedulers, got "
                             f"{len(schedulers)} schedulers and {len(milestones)} milestones")
        for m in milestones:
            _check_int(owner, "milestone", m, 0)
        if milestones != sorted(milestones):
            raise ValueError(f"{owner}: milestones must be non-decreasing, got {milestones}")
        self._schedulers = schedulers
        self._milestones = [int(m) for m in milestones]
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:  # undo the schedulers' own initial steps
            group["lr"] = group["initial_lr"]
        self.recursive_undo()
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def recursive_undo(self, sched=None) -> None:
        """Take one epoch off every (nested) scheduler's last_epoch."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        sd = super().state_dict()
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if len(state_dict.get("_schedulers", ())) != len(self._schedulers):
            raise ValueError(f"SequentialLR.load_state_dict: expected {len(self._schedulers)} "
                             "scheduler states")
        super().load_state_dict(state_dict)
        for s, saved in zip(self._schedulers, state_dict["_schedulers"], strict=True):
            s.load_state_dict(saved)


class ReduceLROnPlateau(LRScheduler):
    """lr = max(lr * factor, min_lr) once the metric has not improved for `patience` epochs
    (then `cooldown` epochs without counting); step(metric) after each evaluation.

    Args:
        optimizer: as LRScheduler (its lrs are not changed at construction).
        mode: "min" or "max".
        factor: in [0, 1).
        patience: epochs without improvement tolerated, an int >= 0.
        threshold: improvement needed, finite >= 0: relative (best * (1 -/+ threshold)) or
            absolute (best -/+ threshold) per threshold_mode "rel" / "abs".
        cooldown: an int >= 0.
        min_lr: finite >= 0, or one per param group.
        eps: a reduction smaller than eps is skipped.
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr: float | list[float] = 0, eps: float = 1e-8) -> None:
        owner = "ReduceLROnPlateau"
        self.factor = check_hyper(owner, "factor", factor, 0.0, 1.0, high_open=True)
        _check_optimizer(owner, optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            self.default_min_lr = None
            self.min_lrs = [check_hyper(owner, "min_lr", v)
                            for v in _per_group(owner, "min_lr", optimizer, min_lr)]
        else:
            self.default_min_lr = check_hyper(owner, "min_lr", min_lr)
            self.min_lrs = [self.default_min_lr] * len(optimizer.param_groups)
        self.patience = _check_int(owner, "patience", patience, 0)
        self.cooldown = _check_int(owner, "cooldown", cooldown, 0)
        self.eps = check_hyper(owner, "eps", eps)
        self.last_epoch = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]
        self._init_is_better(mode, check_hyper(owner, "threshold", threshold), threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in {"min", "max"}:
            raise ValueError(f"ReduceLROnPlateau: mode {mode!r} is unknown; expected 'min' or "
                             "'max'")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError(f"ReduceLROnPlateau: threshold mode {threshold_mode!r} is unknown; "
                             "expected 'rel' or 'abs'")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def step(self, metrics, epoch: int | None = None) -> None:  # type: ignore[override]
        """Count the epoch as an improvement on the best metric or not, and reduce the lrs
        after more than `patience` bad epochs outside the cooldown."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"ReduceLROnPlateau: the optimizer has {len(groups)} param "
                                   f"groups but min_lrs has {len(self.min_lrs)}")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                group["lr"] = new

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr from max_lr/div_factor up to max_lr over pct_start of total_steps,
    then down to initial_lr/final_div_factor (three_phase: back to initial_lr first), annealed
    by cos or linear; with cycle_momentum the group's momentum (SGD, RMSprop) or betas[0] (Adam)
    moves the opposite way between max_momentum and base_momentum. It writes initial_lr,
    max_lr, min_lr (and max_momentum, base_momentum) into the param groups, as torch does.

    Args:
        optimizer: as LRScheduler.
        max_lr: finite >= 0, or one per param group.
        total_steps: an int >= 1, or given as epochs * steps_per_epoch.
        pct_start: a float in [0, 1].
        anneal_strategy: "cos" or "linear".
        cycle_momentum, base_momentum, max_momentum: see above (momenta per group allowed).
        div_factor, final_div_factor: finite > 0.
        three_phase: as above.
        last_epoch: as LRScheduler.
    """

    def __init__(self, optimizer: Optimizer, max_lr, total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1) -> None:
        owner = "OneCycleLR"
        _check_optimizer(owner, optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            self.total_steps = _check_int(owner, "total_steps", total_steps, 1)
        elif epochs is not None and steps_per_epoch is not None:
            self.total_steps = (_check_int(owner, "epochs", epochs, 1)
                                * _check_int(owner, "steps_per_epoch", steps_per_epoch, 1))
        else:
            raise ValueError(f"{owner}: define either total_steps OR (epochs AND "
                             "steps_per_epoch)")
        if not isinstance(pct_start, float):
            raise ValueError(f"{owner}: invalid pct_start={pct_start!r}; expected a float in "
                             "[0, 1]")
        check_hyper(owner, "pct_start", pct_start, 0.0, 1.0)
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"{owner}: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self._anneal_func_type = anneal_strategy
        n, up = self.total_steps, float(pct_start * self.total_steps)
        phases = [(up - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum")]
        if three_phase:
            phases.append((float(2 * pct_start * n) - 2, "max_lr", "initial_lr",
                           "base_momentum", "max_momentum"))
            phases.append((n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"))
        else:
            phases.append((n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"))
        keys = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")
        self._schedule_phases = [dict(zip(keys, phase)) for phase in phases]
        div = check_hyper(owner, "div_factor", div_factor, low_open=True)
        final_div = check_hyper(owner, "final_div_factor", final_div_factor, low_open=True)
        max_lrs = [check_hyper(owner, "max_lr", v)
                   for v in _per_group(owner, "max_lr", optimizer, max_lr)]
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = top / div
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(f"{owner}: {type(optimizer).__name__} has no momentum or betas "
                                 "to cycle; pass cycle_momentum=False")
            self.use_beta1 = "betas" in optimizer.defaults
            tops = [check_hyper(owner, "max_momentum", v)
                    for v in _per_group(owner, "max_momentum", optimizer, max_momentum)]
            bases = [check_hyper(owner, "base_momentum", v)
                     for v in _per_group(owner, "base_momentum", optimizer, base_momentum)]
            if last_epoch == -1:
                for top, base, group in zip(tops, bases, optimizer.param_groups):
                    self._set_momentum(group, top)
                    group["max_momentum"], group["base_momentum"] = top, base
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {step} times; the specified number of "
                             f"total steps is {self.total_steps}")
        last = len(self._schedule_phases) - 1
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == last:
                    if end == start:
                        raise ValueError(f"OneCycleLR: phase {i} of the cycle has zero length "
                                         f"at step {step} (pct_start * total_steps)")
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]],
                                            pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct))
                    break
                start = end
        return lrs

