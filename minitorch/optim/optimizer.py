"""Optimizer base: parameter groups, per-parameter state, zero_grad and state_dict (torch names).

Updates run in place on the parameters' arrays, outside the graph (no Tensor ops).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np


class Optimizer:
    """Holds param_groups (dicts with "params" and hyperparameters) and per-parameter state."""

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
            self.param_groups.append({**defaults, **group, "params": list(group["params"])})
        self.state: dict[int, dict[str, Any]] = {}  # keyed by id(param)

    def zero_grad(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def _params(self):
        """(group, param, grad array) for every parameter that has a gradient."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
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
        if len(sd["param_groups"]) != len(self.param_groups):
            raise ValueError("optimizer state_dict has a different number of parameter groups")
        params = [p for g in self.param_groups for p in g["params"]]
        for group, saved in zip(self.param_groups, sd["param_groups"]):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError("optimizer state_dict group sizes do not match the parameters")
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {}
        for i, st in sd["state"].items():
            p = params[int(i)]
            self.state[id(p)] = {k: (np.array(v, dtype=p.dtype) if isinstance(v, np.ndarray)
                                     else v) for k, v in st.items()}
