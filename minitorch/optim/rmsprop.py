"""RMSprop (plain, centered, with momentum), in the arithmetic order of torch.optim.RMSprop."""

from __future__ import annotations

from typing import Any

import numpy as np

from .optimizer import Optimizer, check_hyper

_ARRAYS = ("square_avg", "momentum_buffer", "grad_avg")


class RMSprop(Optimizer):
    """v = alpha v + (1-alpha) g^2; centered: ga = lerp(ga, g, 1-alpha), avg = sqrt(v - ga^2)
    + eps, else avg = sqrt(v) + eps; momentum: buf = mu buf + g/avg, p -= lr buf; else
    p -= lr g/avg.

    weight_decay adds wd*p to the gradient (L2). Hyperparameters must be finite: lr, eps,
    weight_decay, momentum >= 0 and alpha in [0, 1] (torch also takes alpha > 1, where v goes
    negative and the update nan); centered a bool (ValueError naming the bad one).
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered))

    def check_group(self, group: dict[str, Any]) -> None:
        for key in ("lr", "eps", "weight_decay", "momentum"):
            check_hyper("RMSprop", key, group[key])
        check_hyper("RMSprop", "alpha", group["alpha"], 0.0, 1.0)
        if not isinstance(group["centered"], bool):
            raise ValueError(f"RMSprop: invalid centered={group['centered']!r}; expected a bool")

    @staticmethod
    def _keys(group: dict[str, Any]) -> list[str]:
        """The state arrays the group's options use."""
        keys = ["square_avg"]
        if group["momentum"] > 0:
            keys.append("momentum_buffer")
        if group["centered"]:
            keys.append("grad_avg")
        return keys

    def check_state(self, p, st: dict[str, Any]) -> dict[str, Any]:
        step = st.get("step")
        if not (isinstance(step, (int, np.integer)) and not isinstance(step, bool) and step >= 0):
            raise ValueError(f"RMSprop state 'step' must be an int >= 0, got {step!r}")
        for key in _ARRAYS:
            v = st.get(key)
            if (key == "square_avg" or v is not None) and (
                    not isinstance(v, np.ndarray) or v.shape != p.shape):
                got = v.shape if isinstance(v, np.ndarray) else type(v).__name__
                raise ValueError(f"RMSprop state {key!r} must be an array of shape {p.shape}, "
                                 f"got {got}")
        return {"step": int(step), **{k: np.array(st[k], dtype=p.dtype)
                                      for k in _ARRAYS if k in st}}

    def _state(self, group: dict[str, Any], p) -> dict[str, Any]:
        """p's state, with a zero array for every key the group uses and p lacks (torch would
        raise KeyError when momentum or centered is switched on mid-run)."""
        state = self.state.setdefault(id(p), {"step": 0})
        for key in self._keys(group):
            if key not in state:
                state[key] = self._state_array(p, key)
        return state

    def _param_step(self, group: dict[str, Any], p, g: np.ndarray) -> None:
        lr, alpha, eps, wd = group["lr"], group["alpha"], group["eps"], group["weight_decay"]
        mu = group["momentum"]
        state = self._state(group, p)
        state["step"] += 1
        if wd:
            g = g + wd * p.data
        v = state["square_avg"]
        v *= alpha
        v += (1.0 - alpha) * g * g
        if group["centered"]:
            ga = state["grad_avg"]
            _lerp_(ga, g, 1.0 - alpha)
            avg = np.sqrt(v - ga * ga)
        else:
            avg = np.sqrt(v)
        avg += eps
        if mu > 0:
            buf = state["momentum_buffer"]
            buf *= mu
            buf += g / avg
            p.data -= lr * buf
        else:
            p.data -= lr * g / avg

    def _flat_ready(self, group: dict[str, Any], fg, first: int, stop: int) -> bool:
        """Whether the group's state allows one flat update: none yet (created here, as views
        of the flat buffers), or every array the group uses is that view, at one step."""
        params, keys = group["params"], self._keys(group)
        views = {k: self._moments(fg, k) for k in keys}
        states = [self.state.get(id(p)) for p in params]
        if all(st is None for st in states):
            lo, hi = fg.offsets[first], fg.offsets[stop]
            for buf, _ in views.values():
                buf[lo:hi] = 0
            for p, i in zip(params, range(first, stop)):
                self.state[id(p)] = {"step": 0, **{k: views[k][1][i] for k in keys}}
            return True
        return all(st is not None and st["step"] == states[0]["step"]
                   and all(st.get(k) is views[k][1][i] for k in keys)
                   for st, i in zip(states, range(first, stop)))

    def _flat_step(self, group: dict[str, Any], fg, first: int, stop: int) -> None:
        """_param_step on the group's slice of the flat buffers, a chunk at a time, with the
        same operations in the same order (so the same bits), into two chunk-sized temporaries
        allocated once per step."""
        lr, alpha, eps, wd = group["lr"], group["alpha"], group["eps"], group["weight_decay"]
        mu, centered = group["momentum"], group["centered"]
        params = group["params"]
        self._bump_versions(params)
        for p in params:
            self.state[id(p)]["step"] += 1
        v_all = self._moments(fg, "square_avg")[0]
        ga_all = self._moments(fg, "grad_avg")[0] if centered else None
        buf_all = self._moments(fg, "momentum_buffer")[0] if mu > 0 else None
        start, end = fg.offsets[first], fg.offsets[stop]
        for lo, hi, tmp, tmp2 in self._chunks(fg, start, end, True):
            p, g, v = fg.data[lo:hi], fg.grad[lo:hi], v_all[lo:hi]
            if wd:
                np.multiply(p, wd, out=tmp2)
                g = np.add(g, tmp2, out=tmp2)  # g + wd*p
            v *= alpha
            np.multiply(g, 1.0 - alpha, out=tmp)
            v += np.multiply(tmp, g, out=tmp)  # (1-alpha)*g*g
            if centered:
                ga = ga_all[lo:hi]
                _lerp_(ga, g, 1.0 - alpha, tmp)
                np.multiply(ga, ga, out=tmp)
                np.subtract(v, tmp, out=tmp)
                np.sqrt(tmp, out=tmp)
            else:
                np.sqrt(v, out=tmp)
            tmp += eps  # avg
            if mu > 0:
                buf = buf_all[lo:hi]
                buf *= mu
                buf += np.divide(g, tmp, out=tmp)
                p -= np.multiply(buf, lr, out=tmp)
            else:
                np.multiply(g, lr, out=tmp2)  # g may be tmp2 itself: it is not read again
                p -= np.divide(tmp2, tmp, out=tmp2)  # lr*g/avg


def _lerp_(a: np.ndarray, b: np.ndarray, w: float, tmp: np.ndarray | None = None) -> None:
    """a = a + w (b - a) in place, by torch's formula for its weight (w < 0.5: from a; else
    b - (b - a)(1 - w)), so the bits match torch.lerp_."""
    diff = np.subtract(b, a, out=tmp)
    if w < 0.5:
        a += np.multiply(diff, w, out=diff)
    else:
        np.multiply(diff, 1.0 - w, out=diff)
        np.subtract(b, diff, out=a)
