"""Adagrad, in the arithmetic order of torch.optim.Adagrad (its state made at construction)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .optimizer import Optimizer, check_flags, check_hyper


def adagrad(p, g, s, temps, *, clr, eps, wd, maximize):
    """One Adagrad step on arrays (p and s's sum in place; g read only): s += g^2;
    p -= clr * g / (sqrt(s) + eps). temps: 2 arrays like p."""
    tmp, tmp2 = temps
    if maximize:
        g = np.negative(g, out=tmp2)
    if wd:
        np.multiply(p, wd, out=tmp)
        g = np.add(g, tmp, out=tmp2)  # g + wd*p
    total = s["sum"]
    total += np.multiply(g, g, out=tmp)
    np.sqrt(total, out=tmp)
    tmp += eps  # std
    np.multiply(g, clr, out=tmp2)  # g may be tmp2 itself: it is not read again
    p -= np.divide(tmp2, tmp, out=tmp2)  # clr*g/std


class Adagrad(Optimizer):
    """s += g^2; p -= clr * g / (sqrt(s) + eps), clr = lr / (1 + (t-1) lr_decay) at step t.

    weight_decay adds wd*p to the gradient (L2); maximize ascends; foreach and fused give the
    same result; differentiable is refused at step() as torch refuses it for leaf parameters.
    Every parameter's state (step 0, s filled with initial_accumulator_value) exists from
    construction, as in torch, which also takes that value from the constructor only (a
    per-group value is kept in the group but not used). Hyperparameters must be finite and >= 0
    (ValueError naming the bad one).
    """

    rule = staticmethod(adagrad)

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused))
        for group in self.param_groups:
            for p in group["params"]:
                self._state(group, p)

    def check_group(self, group: dict[str, Any]) -> None:
        for key in ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"):
            check_hyper("Adagrad", key, group[key])
        check_flags("Adagrad", group)

    def check_state(self, p, st: dict[str, Any]) -> dict[str, Any]:
        step = st.get("step")
        if not (isinstance(step, (int, np.integer)) and not isinstance(step, bool) and step >= 0):
            raise ValueError(f"Adagrad state 'step' must be an int >= 0, got {step!r}")
        v = st.get("sum")
        if not isinstance(v, np.ndarray) or v.shape != p.shape:
            got = v.shape if isinstance(v, np.ndarray) else type(v).__name__
            raise ValueError(f"Adagrad state 'sum' must be an array of shape {p.shape}, got {got}")
        return {"step": int(step), "sum": np.array(v, dtype=p.dtype)}

    def _keys(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("sum",)

    def _temps(self, group: dict[str, Any]) -> int:
        return 2

    def _new_state(self, group: dict[str, Any], p) -> dict[str, Any]:
        """Step 0 and the sum filled with the constructor's initial_accumulator_value."""
        total = self._state_array(p, "sum")
        total[...] = self.defaults["initial_accumulator_value"]
        return {"step": 0, "sum": total}

    def _hyper(self, group: dict[str, Any], states: list[dict[str, Any]]) -> dict[str, Any]:
        for st in states:
            st["step"] += 1
        clr = group["lr"] / (1 + (states[0]["step"] - 1) * group["lr_decay"])
        return dict(clr=clr, eps=group["eps"], wd=group["weight_decay"],
                    maximize=group["maximize"])
