"""Optimizer base: parameter groups, per-parameter state, zero_grad and state_dict (torch names),
and the one check of hyperparameters every optimizer and schedule uses (check_hyper).

Updates run in place on the parameters' arrays, outside the graph (no Tensor ops).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..engine.registry import inplace


def _is_real(v: Any) -> bool:
    return (isinstance(v, (int, float, np.integer, np.floating))
            and not isinstance(v, (bool, np.bool_)))


def check_hyper(owner: str, name: str, value: Any, low: float = 0.0, high: float = math.inf,
                low_open: bool = False, high_open: bool = False) -> float:
    """`value` as a float if it is a finite real number in the given range, else ValueError
    naming owner, name, the range and the value (torch rejects nan and negatives; this also
    rejects inf, which no update can use: lr=inf turns every weight into nan/inf)."""
    ok = _is_real(value) and math.isfinite(value)
    if ok:
        ok = (value > low if low_open else value >= low) and (
            value < high if high_open else value <= high)
    if not ok:
        lo, hi = "(" if low_open else "[", ")" if high_open or high == math.inf else "]"
        raise ValueError(f"{owner}: invalid {name}={value!r}; expected a finite number in "
                         f"{lo}{low:g}, {high:g}{hi}")
    return float(value)


class Optimizer:
    """Holds param_groups (dicts with "params" and hyperparameters) and per-parameter state.

    Subclasses define check_group(group), which raises ValueError on a bad hyperparameter; it
    runs on every group at construction (per-group overrides included) and on load_state_dict.
    """

    def __init__(self, params: Iterable, defaults: dict[str, Any]):
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__} got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.defaults = defaults
        self.param_groups: list[dict[str, Any]] = []
        for group in groups:
            unknown = set(group) - set(defaults) - {"params"}
            if unknown:
                raise KeyError(f"{type(self).__name__}: unknown group option(s) {sorted(unknown)}")
            merged = {**defaults, **group, "params": list(group["params"])}
            self.check_group(merged)
            self.param_groups.append(merged)
        self.state: dict[int, dict[str, Any]] = {}  # keyed by id(param)

    def check_group(self, group: dict[str, Any]) -> None:
        """Raise ValueError naming the first bad hyperparameter of `group` (base: lr only)."""
        check_hyper(type(self).__name__, "lr", group["lr"])

    def zero_grad(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def _params(self):
        """(group, param, grad array) for every parameter that has a gradient. The caller's
        loop body runs inside `inplace(p.data)`: it may update p.data in place even while a
        retained graph saved it, and that graph's backward then raises (as in torch)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    with inplace(p.data):
                        yield group, p, p.grad.data

    def step(self) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]} like torch."""
        index, groups, state = 0, [], {}
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                if id(p) in self.state:
                    state[index] = {k: (v.copy() if isinstance(v, np.ndarray) else v)
                                    for k, v in self.state[id(p)].items()}
                ids.append(index)
                index += 1
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, sd: dict[str, Any]) -> None:
        """Restore groups' hyperparameters and per-parameter state; a state_dict whose groups,
        hyperparameters or state do not fit raises ValueError and changes nothing."""
        if len(sd["param_groups"]) != len(self.param_groups):
            raise ValueError("optimizer state_dict has a different number of parameter groups")
        params = [p for g in self.param_groups for p in g["params"]]
        new_groups = []
        for group, saved in zip(self.param_groups, sd["param_groups"]):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError("optimizer state_dict group sizes do not match the parameters")
            merged = {**group, **{k: v for k, v in saved.items() if k != "params"}}
            self.check_group(merged)
            new_groups.append(merged)
        state = {}
        for i, st in sd["state"].items():
            try:
                idx = int(i)
            except (TypeError, ValueError):
                raise ValueError(f"optimizer state key {i!r} is not a parameter index") from None
            if not 0 <= idx < len(params) or not isinstance(st, dict):
                raise ValueError(f"optimizer state entry {i!r} does not fit the {len(params)} "
                                 "parameters")
            p = params[idx]
            state[id(p)] = self.check_state(p, dict(st))
        for group, merged in zip(self.param_groups, new_groups):
            group.update(merged)
        self.state = state

    def check_state(self, p, st: dict[str, Any]) -> dict[str, Any]:
        """One parameter's saved state, arrays cast to its dtype (subclasses check the keys)."""
        return {k: (np.array(v, dtype=p.dtype) if isinstance(v, np.ndarray) else v)
                for k, v in st.items()}
