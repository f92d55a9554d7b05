"""RMSprop (plain, centered, with momentum), in the arithmetic order of torch.optim.RMSprop."""

from __future__ import annotations

from typing import Any

import numpy as np

from .optimizer import Optimizer, check_flags, check_hyper

_ARRAYS = ("square_avg", "momentum_buffer", "grad_avg")


def rmsprop(p, g, s, temps, *, lr, alpha, eps, wd, momentum, maximize):
    """One RMSprop step on arrays (p and s's arrays in place; g read only): v = alpha v +
    (1-alpha) g^2; avg = sqrt(v - ga^2) + eps with ga = lerp(ga, g, 1-alpha) when s has
    "grad_avg" (centered), else sqrt(v) + eps; then buf = momentum buf + g/avg, p -= lr buf, or
    p -= lr g/avg without momentum. temps: 2 arrays like p."""
    tmp, tmp2 = temps
    if maximize:
        g = np.negative(g, out=tmp2)
    if wd:
        np.multiply(p, wd, out=tmp)
        g = np.add(g, tmp, out=tmp2)  # g + wd*p
    v = s["square_avg"]
    v *= alpha
    np.multiply(g, 1.0 - alpha, out=tmp)
    v += np.multiply(tmp, g, out=tmp)  # (1-alpha)*g*g
    if "grad_avg" in s:
        ga = s["grad_avg"]
        _lerp_(ga, g, 1.0 - alpha, tmp)
        np.multiply(ga, ga, out=tmp)
        np.subtract(v, tmp, out=tmp)
        np.sqrt(tmp, out=tmp)
    else:
        np.sqrt(v, out=tmp)
    tmp += eps  # avg
    if momentum > 0:
        buf = s["momentum_buffer"]
        buf *= momentum
        buf += np.divide(g, tmp, out=tmp)
        p -= np.multiply(buf, lr, out=tmp)
    else:
        np.multiply(g, lr, out=tmp2)  # g may be tmp2 itself: it is not read again
        p -= np.divide(tmp2, tmp, out=tmp2)  # lr*g/avg


def _lerp_(a: np.ndarray, b: np.ndarray, w: float, tmp: np.ndarray) -> None:
    """a = a + w (b - a) in place, by torch's formula for its weight (w < 0.5: from a; else
    b - (b - a)(1 - w)), so the bits match torch.lerp_."""
    diff = np.subtract(b, a, out=tmp)
    if w < 0.5:
        a += np.multiply(diff, w, out=diff)
    else:
        np.multiply(diff, 1.0 - w, out=diff)
        np.subtract(b, diff, out=a)


class RMSprop(Optimizer):
    """v = alpha v + (1-alpha) g^2; centered: ga = lerp(ga, g, 1-alpha), avg = sqrt(v - ga^2)
    + eps, else avg = sqrt(v) + eps; momentum: buf = mu buf + g/avg, p -= lr buf; else
    p -= lr g/avg.

    weight_decay adds wd*p to the gradient (L2); maximize ascends; foreach gives the same
    result; capturable and differentiable are refused at step() as torch refuses them on a CPU.
    Hyperparameters must be finite: lr, eps, weight_decay, momentum >= 0 and alpha in [0, 1]
    (torch also takes alpha > 1, where v goes negative and the update nan); centered a bool
    (ValueError naming the bad one).
    """

    rule = staticmethod(rmsprop)

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered,
                                      capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))

    def check_group(self, group: dict[str, Any]) -> None:
        for key in ("lr", "eps", "weight_decay", "momentum"):
            check_hyper("RMSprop", key, group[key])
        check_hyper("RMSprop", "alpha", group["alpha"], 0.0, 1.0)
        if not isinstance(group["centered"], bool):
            raise ValueError(f"RMSprop: invalid centered={group['centered']!r}; expected a bool")
        check_flags("RMSprop", group)

    def _keys(self, group: dict[str, Any]) -> tuple[str, ...]:
        """The state arrays the group's options use (an option switched on mid-run starts a
        zero array, where torch would raise KeyError)."""
        keys = ("square_avg",)
        if group["momentum"] > 0:
            keys += ("momentum_buffer",)
        if group["centered"]:
            keys += ("grad_avg",)
        return keys

    def _temps(self, group: dict[str, Any]) -> int:
        return 2

    def _new_state(self, group: dict[str, Any], p) -> dict[str, Any]:
        return {"step": 0}

    def _hyper(self, group: dict[str, Any], states: list[dict[str, Any]]) -> dict[str, Any]:
        for st in states:
            st["step"] += 1
        return dict(lr=group["lr"], alpha=group["alpha"], eps=group["eps"],
                    wd=group["weight_decay"], momentum=group["momentum"],
                    maximize=group["maximize"])

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
