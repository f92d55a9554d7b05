"""Adagrad, in the arithmetic order of torch.optim.Adagrad (its state made at construction)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .optimizer import Optimizer, check_hyper


class Adagrad(Optimizer):
    """s += g^2; p -= clr * g / (sqrt(s) + eps), clr = lr / (1 + (t-1) lr_decay) at step t.

    weight_decay adds wd*p to the gradient (L2). Every parameter's state (step 0, s filled with
    initial_accumulator_value) exists from construction, as in torch, which also takes that
    value from the constructor only (a per-group value is kept in the group but not used).
    Hyperparameters must be finite and >= 0 (ValueError naming the bad one).
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value))
        for group in self.param_groups:
            for p in group["params"]:
                self._state(p)

    def check_group(self, group: dict[str, Any]) -> None:
        for key in ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"):
            check_hyper("Adagrad", key, group[key])

    def check_state(self, p, st: dict[str, Any]) -> dict[str, Any]:
        step = st.get("step")
        if not (isinstance(step, (int, np.integer)) and not isinstance(step, bool) and step >= 0):
            raise ValueError(f"Adagrad state 'step' must be an int >= 0, got {step!r}")
        v = st.get("sum")
        if not isinstance(v, np.ndarray) or v.shape != p.shape:
            got = v.shape if isinstance(v, np.ndarray) else type(v).__name__
            raise ValueError(f"Adagrad state 'sum' must be an array of shape {p.shape}, got {got}")
        return {"step": int(step), "sum": np.array(v, dtype=p.dtype)}

    def _state(self, p) -> dict[str, Any]:
        """p's state, made (step 0, the constructor's initial_accumulator_value) if missing."""
        state = self.state.get(id(p))
        if state is None:
            state = self.state[id(p)] = {"step": 0, "sum": self._state_array(p, "sum")}
            state["sum"][...] = self.defaults["initial_accumulator_value"]
        return state

    def _param_step(self, group: dict[str, Any], p, g: np.ndarray) -> None:
        lr, lr_decay, eps, wd = group["lr"], group["lr_decay"], group["eps"], group["weight_decay"]
        state = self._state(p)
        state["step"] += 1
        if wd:
            g = g + wd * p.data
        clr = lr / (1 + (state["step"] - 1) * lr_decay)
        s = state["sum"]
        s += g * g
        std = np.sqrt(s)
        std += eps
        p.data -= clr * g / std

    def _flat_ready(self, group: dict[str, Any], fg, first: int, stop: int) -> bool:
        """Whether every parameter's sum is its view of the flat buffer, all at one step (the
        state is made at construction, as views when the parameters were flat then)."""
        views = self._moments(fg, "sum")[1]
        states = [self._state(p) for p in group["params"]]
        return all(st["step"] == states[0]["step"] and st["sum"] is views[i]
                   for st, i in zip(states, range(first, stop)))

    def _flat_step(self, group: dict[str, Any], fg, first: int, stop: int) -> None:
        """_param_step on the group's slice of the flat buffers, a chunk at a time, with the
        same operations in the same order (so the same bits), into two chunk-sized temporaries
        allocated once per step."""
        lr, lr_decay, eps, wd = group["lr"], group["lr_decay"], group["eps"], group["weight_decay"]
        params = group["params"]
        self._bump_versions(params)
        for p in params:
            self.state[id(p)]["step"] += 1
        clr = lr / (1 + (self.state[id(params[0])]["step"] - 1) * lr_decay)
        s_all = self._moments(fg, "sum")[0]
        start, end = fg.offsets[first], fg.offsets[stop]
        for lo, hi, tmp, tmp2 in self._chunks(fg, start, end, True):
            p, g, s = fg.data[lo:hi], fg.grad[lo:hi], s_all[lo:hi]
            if wd:
                np.multiply(p, wd, out=tmp2)
                g = np.add(g, tmp2, out=tmp2)  # g + wd*p
            s += np.multiply(g, g, out=tmp)
            np.sqrt(s, out=tmp)
            tmp += eps  # std
            np.multiply(g, clr, out=tmp2)  # g may be tmp2 itself: it is not read again
            p -= np.divide(tmp2, tmp, out=tmp2)  # clr*g/std
