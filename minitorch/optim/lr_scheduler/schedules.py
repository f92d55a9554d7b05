"""The schedules with a rule per step: LambdaLR, MultiplicativeLR, StepLR, MultiStepLR,
ConstantLR, LinearLR, ExponentialLR, CosineAnnealingLR, and SequentialLR chaining them."""

from __future__ import annotations

import math
import types
from bisect import bisect_right
from collections import Counter
from typing import Any

from ..optimizer import Optimizer, check_hyper
from .base import LRScheduler, check_int, check_optimizer
from .plateau import ReduceLROnPlateau


class _Lambdas(LRScheduler):
    """The lr_lambda handling LambdaLR and MultiplicativeLR share (torch's state_dict keeps a
    callable object's __dict__, and None for a plain function or lambda)."""

    _unsaved = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1) -> None:
        owner = type(self).__name__
        check_optimizer(owner, optimizer)
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
        self.step_size = check_int("StepLR", "step_size", step_size, 1)
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
            check_int("MultiStepLR", "milestone", m, 0)
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
        self.total_iters = check_int("ConstantLR", "total_iters", total_iters, 0)
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
        self.total_iters = check_int("LinearLR", "total_iters", total_iters, 1)
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
        self.T_max = check_int("CosineAnnealingLR", "T_max", T_max, 1)
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
        check_optimizer(owner, optimizer)
        check_int(owner, "last_epoch", last_epoch, -1)
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
            check_int(owner, "milestone", m, 0)
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
