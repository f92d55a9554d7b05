"""Adam and AdamW (decoupled weight decay), in the exact arithmetic order of torch.optim.Adam."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .optimizer import Optimizer, check_flags, check_hyper


def adam(p, g, s, temps, *, lr, b1, b2, eps, wd, decoupled, maximize, step_size, bias2):
    """One Adam step on arrays (p, s's moments in place; g read only): m = b1 m + (1-b1) g;
    v = b2 v + (1-b2) g^2 (amsgrad: v_max = max(v_max, v), used for v); p -= step_size * m /
    (sqrt(v)/bias2 + eps). temps: 1 array like p, 2 with maximize or L2 decay."""
    tmp = temps[0]
    if maximize:
        g = np.negative(g, out=temps[1])
    if wd:
        if decoupled:
            p *= 1.0 - lr * wd
        else:
            np.multiply(p, wd, out=tmp)
            g = np.add(g, tmp, out=temps[1])  # g + wd*p
    m, v = s["exp_avg"], s["exp_avg_sq"]
    m *= b1
    m += np.multiply(g, 1.0 - b1, out=tmp)
    v *= b2
    np.multiply(g, 1.0 - b2, out=tmp)
    v += np.multiply(tmp, g, out=tmp)  # (1-b2)*g*g
    if "max_exp_avg_sq" in s:  # amsgrad
        v = np.maximum(s["max_exp_avg_sq"], v, out=s["max_exp_avg_sq"])
    np.sqrt(v, out=tmp)
    tmp /= bias2
    tmp += eps  # denom
    np.divide(m, tmp, out=tmp)
    p -= np.multiply(tmp, step_size, out=tmp)


class Adam(Optimizer):
    """m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
    p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).

    weight_decay adds wd*p to the gradient (L2, as torch.optim.Adam), or with
    decoupled_weight_decay multiplies p by 1 - lr*wd first (AdamW). amsgrad normalizes by the
    running maximum of v; maximize ascends. foreach, fused, capturable and differentiable are
    torch's flags: accepted with torch's results, refused where torch refuses them on a CPU.
    Hyperparameters must be finite: lr >= 0, 0 <= betas < 1, eps >= 0, weight_decay >= 0
    (ValueError naming the bad one).
    """

    rule = staticmethod(adam)

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False):
        super().__init__(params, dict(
            lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
            maximize=maximize, foreach=foreach, capturable=capturable,
            differentiable=differentiable, fused=fused,
            decoupled_weight_decay=decoupled_weight_decay))

    def check_group(self, group: dict[str, Any]) -> None:
        name = type(self).__name__
        check_hyper(name, "lr", group["lr"])
        betas = group["betas"]
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"{name}: invalid betas={betas!r}; expected two numbers in [0, 1)")
        for i, b in enumerate(betas):
            check_hyper(name, f"betas[{i}]", b, 0.0, 1.0, high_open=True)
        group["betas"] = tuple(float(b) for b in betas)
        check_hyper(name, "eps", group["eps"])
        check_hyper(name, "weight_decay", group["weight_decay"])
        for key in ("amsgrad", "decoupled_weight_decay"):
            if not isinstance(group[key], bool):
                raise ValueError(f"{name}: invalid {key}={group[key]!r}; expected a bool")
        check_flags(name, group)

    def check_state(self, p, st: dict[str, Any]) -> dict[str, Any]:
        step = st.get("step")
        if not (isinstance(step, (int, np.integer)) and not isinstance(step, bool) and step >= 0):
            raise ValueError(f"Adam state 'step' must be an int >= 0, got {step!r}")
        keys = [k for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
                if k != "max_exp_avg_sq" or k in st]
        for key in keys:
            v = st.get(key)
            if not isinstance(v, np.ndarray) or v.shape != p.shape:
                got = v.shape if isinstance(v, np.ndarray) else type(v).__name__
                raise ValueError(f"Adam state {key!r} must be an array of shape {p.shape}, "
                                 f"got {got}")
        return {"step": int(step), **{k: np.array(st[k], dtype=p.dtype) for k in keys}}

    def _keys(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())

    def _temps(self, group: dict[str, Any]) -> int:
        coupled = bool(group["weight_decay"]) and not group["decoupled_weight_decay"]
        return 2 if group["maximize"] or coupled else 1

    def _new_state(self, group: dict[str, Any], p) -> dict[str, Any]:
        return {"step": 0}

    def _hyper(self, group: dict[str, Any], states: list[dict[str, Any]]) -> dict[str, Any]:
        for st in states:
            st["step"] += 1
        t, lr, (b1, b2) = states[0]["step"], group["lr"], group["betas"]
        return dict(lr=lr, b1=b1, b2=b2, eps=group["eps"], wd=group["weight_decay"],
                    decoupled=group["decoupled_weight_decay"], maximize=group["maximize"],
                    step_size=lr / (1.0 - b1**t), bias2=math.sqrt(1.0 - b2**t))


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr*wd before the Adam update
    (torch.optim.AdamW: Adam with decoupled_weight_decay=True in every group)."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def load_state_dict(self, sd: dict[str, Any]) -> None:
        """As Adam's, with decoupled weight decay kept on in every group (torch's
        AdamW.__setstate__)."""
        super().load_state_dict(sd)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
