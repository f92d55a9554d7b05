"""ReduceLROnPlateau: the lr cut by a factor when a watched metric stops improving."""

from __future__ import annotations

import math
import warnings
from typing import Any

from ..optimizer import Optimizer, check_hyper
from .base import EPOCH_DEPRECATION_WARNING, LRScheduler, check_int, check_optimizer, per_group


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
        check_optimizer(owner, optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            self.default_min_lr = None
            self.min_lrs = [check_hyper(owner, "min_lr", v)
                            for v in per_group(owner, "min_lr", optimizer, min_lr)]
        else:
            self.default_min_lr = check_hyper(owner, "min_lr", min_lr)
            self.min_lrs = [self.default_min_lr] * len(optimizer.param_groups)
        self.patience = check_int(owner, "patience", patience, 0)
        self.cooldown = check_int(owner, "cooldown", cooldown, 0)
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
