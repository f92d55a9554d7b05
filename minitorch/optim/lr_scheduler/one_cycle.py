"""OneCycleLR: the 1cycle policy, with momentum (or Adam's beta1) cycled against the lr."""

from __future__ import annotations

import math
from typing import Any

from ..optimizer import Optimizer, check_hyper
from .base import LRScheduler, check_int, check_optimizer, per_group


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
        check_optimizer(owner, optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            self.total_steps = check_int(owner, "total_steps", total_steps, 1)
        elif epochs is not None and steps_per_epoch is not None:
            self.total_steps = (check_int(owner, "epochs", epochs, 1)
                                * check_int(owner, "steps_per_epoch", steps_per_epoch, 1))
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
                   for v in per_group(owner, "max_lr", optimizer, max_lr)]
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
                    for v in per_group(owner, "max_momentum", optimizer, max_momentum)]
            bases = [check_hyper(owner, "base_momentum", v)
                     for v in per_group(owner, "base_momentum", optimizer, base_momentum)]
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
