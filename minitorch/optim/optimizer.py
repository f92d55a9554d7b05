"""Optimizer base: parameter groups, per-parameter state, zero_grad and state_dict (torch names),
and the one check of hyperparameters every optimizer and schedule uses (check_hyper).

Updates run in place on the parameters' arrays, outside the graph (no Tensor ops). A group whose
parameters are one run of a flat buffer (nn/flat.py) is updated as whole-buffer slices, with
moments in flat buffers too; anything else takes the per-parameter path, with identical results.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ..engine import Tensor
from ..engine.kernels import BLOCK as CHUNK  # elements per slice of a flat update (in cache)
from ..engine.node import inplace
from ..engine.pool import empty
from ..nn import flat
from ..nn.flat import FlatGroup


def _as_saved(key: str, v: Any) -> Any:
    """A state value as minitorch saves it: a Tensor (what a torch checkpoint loads as) is its
    array, and torch's step counter (a 0-d float tensor holding a whole number) an int."""
    if isinstance(v, Tensor):
        v = v.data
    if (key == "step" and isinstance(v, (np.ndarray, np.floating)) and np.ndim(v) == 0
            and v.dtype.kind == "f" and float(v).is_integer()):
        return int(v)
    return v


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


def check_flags(owner: str, group: dict[str, Any]) -> None:
    """Check torch's implementation flags present in `group`: maximize, capturable and
    differentiable are bools, foreach and fused a bool or None; fused excludes foreach and
    differentiable, as torch refuses at construction (RuntimeError, torch's words). The update
    is the same whichever of foreach/fused is chosen (torch's give equal results to round-off)."""
    for key in ("maximize", "capturable", "differentiable", "foreach", "fused"):
        if key not in group:
            continue
        value = group[key]
        if not (isinstance(value, bool) or (value is None and key in ("foreach", "fused"))):
            kind = "a bool or None" if key in ("foreach", "fused") else "a bool"
            raise ValueError(f"{owner}: invalid {key}={value!r}; expected {kind}")
    if group.get("fused"):
        if group.get("differentiable"):
            raise RuntimeError(f"{owner}: `fused` does not support `differentiable`")
        if group.get("foreach"):
            raise RuntimeError(f"{owner}: `fused` and `foreach` cannot be `True` together.")


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
            self.add_param_group(group)
        self.state: dict[int, dict[str, Any]] = {}  # keyed by id(param)
        # per flat group, per state key: (1-D buffer laid out like the group, a view per param)
        self._flat_state: weakref.WeakKeyDictionary[FlatGroup, dict] = (
            weakref.WeakKeyDictionary())

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (and its own hyperparameters; the rest from the defaults),
        as torch's: e.g. layers unfrozen during fine-tuning."""
        name = type(self).__name__
        if not isinstance(param_group, dict):
            raise TypeError(f"{name}: a param group must be a dict, got "
                            f"{type(param_group).__name__}")
        unknown = set(param_group) - set(self.defaults) - {"params"}
        if unknown:
            raise KeyError(f"{name}: unknown group option(s) {sorted(unknown)}")
        params = param_group["params"]
        params = [params] if hasattr(params, "requires_grad") else list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError(f"{name}: some parameters appear in more than one parameter group")
        merged = {**self.defaults, **param_group, "params": params}
        self.check_group(merged)
        self.param_groups.append(merged)

    def check_group(self, group: dict[str, Any]) -> None:
        """Raise ValueError naming the first bad hyperparameter of `group` (base: lr only)."""
        check_hyper(type(self).__name__, "lr", group["lr"])

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Set every parameter's `.grad` to None (torch's default), or to zeros in place."""
        for group in self.param_groups:
            flat.zero_grad(group["params"], set_to_none)

    def _params(self, groups: list[dict[str, Any]] | None = None) -> Iterator[tuple]:
        """(group, param, grad array) for every parameter of `groups` (default: all) that has a
        gradient. The caller's loop body runs inside `inplace(p.data)`: it may update p.data in
        place even while a retained graph saved it, and that graph's backward then raises (as
        in torch)."""
        for group in self.param_groups if groups is None else groups:
            for p in group["params"]:
                if p.grad is not None:
                    with inplace(p.data):
                        yield group, p, p.grad.data

    @staticmethod
    def _bump_versions(params: list) -> None:
        """Bump the version of each parameter a live graph saved, as `inplace` does on the
        per-parameter path (a flat update writes through the buffer): that graph's backward
        then raises. A saved array is read-only while saved, so a writable one needs none."""
        for p in params:
            if not p.data.flags.writeable:
                with inplace(p.data):
                    pass

    def _moments(self, fg: FlatGroup, key: str) -> tuple[np.ndarray, list[np.ndarray]]:
        """(buffer, one view per parameter) of state `key` for flat group fg, zeros at first."""
        keys = self._flat_state.setdefault(fg, {})
        if key not in keys:
            buf = np.zeros(fg.size, fg.dtype)
            keys[key] = (buf, [fg.slice(buf, i) for i in range(len(fg.views))])
        return keys[key]

    def _flat_views(self, p, key: str) -> tuple[np.ndarray, list[np.ndarray]] | None:
        """_moments of p's flat group, or None if p is not flat."""
        slot = p._flat
        if slot is None or not slot.group.is_flat(slot.index, p):
            return None
        return self._moments(slot.group, key)

    def _state_array(self, p, key: str, like: np.ndarray | None = None) -> np.ndarray:
        """A new state array for p: its view of the flat buffer for `key` when p is flat, else
        its own array; zeros, or a copy of `like`."""
        home = self._flat_views(p, key)
        if home is None:
            return np.zeros_like(p.data) if like is None else like.copy()
        view = home[1][p._flat.index]
        view[...] = 0 if like is None else like
        return view

    def _chunks(self, fg: FlatGroup, start: int, stop: int, temps: int) -> Iterator[tuple]:
        """(lo, hi, [tmp, ...]) over [start, stop) in pieces of at most CHUNK elements, with
        `temps` temporaries of hi - lo elements reused by every piece (a flat step allocates
        nothing large) and freed after the update (nothing held between steps); from a replayed
        step's free planned memory when it lends it (engine/pool.py)."""
        bufs = [empty((min(CHUNK, stop - start),), fg.dtype) for _ in range(temps)]
        for lo in range(start, stop, CHUNK):
            hi = min(lo + CHUNK, stop)
            yield lo, hi, [b[:hi - lo] for b in bufs]

    # -- the update: one rule per optimizer, run over a parameter or a flat buffer's chunks ----
    # A subclass defines:
    #   rule(p, g, s, temps, **hyper): the update on arrays (p and s's arrays in place; g read
    #       only), written with out= into `temps`, so a parameter's arrays and a chunk of the
    #       flat buffers give the same bits;
    #   _keys(group): the state arrays the group's rule uses;
    #   _temps(group): how many temporaries it needs;
    #   _hyper(group, states): advances the step counters of `states` (one per parameter, all
    #       at one step) and returns the rule's scalar arguments.

    rule: Any = None  # staticmethod(rule function)

    def _keys(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ()

    def _temps(self, group: dict[str, Any]) -> int:
        return 1

    def _new_state(self, group: dict[str, Any], p) -> dict[str, Any]:
        """p's state before its first step (its arrays are added by _fill)."""
        return {}

    def _state(self, group: dict[str, Any], p) -> dict[str, Any]:
        """p's state, made by _new_state if missing (and kept unless it would stay empty: SGD
        without momentum keeps none, as torch)."""
        state = self.state.get(id(p))
        if state is None:
            state = self._new_state(group, p)
            if state or self._keys(group):
                self.state[id(p)] = state
        return state

    def _fill(self, group: dict[str, Any], p, state: dict[str, Any]) -> dict[str, Any]:
        """Add a zero array (a view of the flat buffer when p is flat) for every key the group
        uses and the state lacks (first step, or an option switched on mid-run)."""
        for key in self._keys(group):
            if state.get(key) is None:
                state[key] = self._state_array(p, key)
        return state

    def _hyper(self, group: dict[str, Any], states: list[dict[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__} defines no update (_hyper, rule)")

    def step(self) -> None:
        """One update of every group: as whole-buffer slices where the group is one flat run
        whose state is laid out in the flat buffers (_flat_ready, _flat_step), else parameter
        by parameter (_param_step); both run the same rule and give the same bits."""
        for group in self.param_groups:
            self._check_step(group)
        for group in self.param_groups:
            run = flat.flat_run(group["params"])  # (flat group, first, stop) or None
            if run is not None and self._flat_ready(group, *run):
                self._flat_step(group, *run)
                continue
            for _, p, g in self._params([group]):
                self._param_step(group, p, g)

    def _check_step(self, group: dict[str, Any]) -> None:
        """Refuse, before anything is updated, the options torch refuses at step() on a CPU."""
        name = type(self).__name__
        if group.get("capturable") and not group.get("fused"):
            raise AssertionError(f"{name}: capturable=True needs parameters on a CUDA/XPU/HPU "
                                 "device, as torch's (which refuses it on the CPU too); "
                                 "minitorch's are on the CPU")
        if group.get("differentiable") and any(
                p.requires_grad and p.grad is not None for p in group["params"]):
            raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an "
                               "in-place operation (differentiable=True updates the parameters "
                               "inside the graph; torch refuses it for leaf parameters too)")

    def _flat_ready(self, group: dict[str, Any], fg, first: int, stop: int) -> bool:
        """Whether the group's state allows one flat update: no state yet (made here), and
        every state array the group uses either missing for every parameter (made by _fill, as
        views) or, for every one, its view of the flat buffer; all at one step."""
        if self.rule is None:
            return False
        states = [self._state(group, p) for p in group["params"]]
        if any(st.get("step") != states[0].get("step") for st in states):
            return False
        for key in self._keys(group):
            views = self._moments(fg, key)[1]
            have = [st.get(key) for st in states]
            if not (all(a is None for a in have)
                    or all(a is views[i] for a, i in zip(have, range(first, stop)))):
                return False
        return True

    def _flat_step(self, group: dict[str, Any], fg, first: int, stop: int) -> None:
        """The rule over the group's slice of the flat buffers, a chunk at a time, into
        chunk-sized temporaries allocated once per step."""
        params = group["params"]
        self._bump_versions(params)
        states = [self._state(group, p) for p in params]
        hyper = self._hyper(group, states)
        for p, st in zip(params, states):
            self._fill(group, p, st)
        keys = self._keys(group)
        bufs = [self._moments(fg, k)[0] for k in keys]
        start, end = fg.offsets[first], fg.offsets[stop]
        for lo, hi, temps in self._chunks(fg, start, end, self._temps(group)):
            s = {k: b[lo:hi] for k, b in zip(keys, bufs)}
            self.rule(fg.data[lo:hi], fg.grad[lo:hi], s, temps, **hyper)

    def _param_step(self, group: dict[str, Any], p, g: np.ndarray) -> None:
        """The rule over one parameter's own arrays."""
        state = self._state(group, p)
        hyper = self._hyper(group, [state])
        self._fill(group, p, state)
        s = {k: state[k] for k in self._keys(group)}
        temps = [np.empty_like(p.data) for _ in range(self._temps(group))]
        self.rule(p.data, g, s, temps, **hyper)

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
            state[id(p)] = self.check_state(p, {k: _as_saved(k, v) for k, v in st.items()})
        for group, merged in zip(self.param_groups, new_groups):
            group.update(merged)
        for p in params:  # arrays of flat parameters go into their flat buffers' views
            for k, v in state.get(id(p), {}).items():
                if isinstance(v, np.ndarray) and v.shape == p.shape and v.dtype == p.dtype:
                    state[id(p)][k] = self._state_array(p, k, like=v)
        self.state = state

    def check_state(self, p, st: dict[str, Any]) -> dict[str, Any]:
        """One parameter's saved state, arrays cast to its dtype (subclasses check the keys)."""
        return {k: (np.array(v, dtype=p.dtype) if isinstance(v, np.ndarray) else v)
                for k, v in st.items()}
