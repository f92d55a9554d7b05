"""Adam and AdamW (decoupled weight decay), in the exact arithmetic order of torch.optim.Adam."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .optimizer import Optimizer, check_hyper


class Adam(Optimizer):
    """m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
    p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).

    weight_decay adds wd*p to the gradient (L2, as torch.optim.Adam). Hyperparameters must be
    finite: lr >= 0, 0 <= betas < 1, eps >= 0, weight_decay >= 0 (ValueError naming the bad one).
    """

    decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

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

    def check_state(self, p, st: dict[str, Any]) -> dict[str, Any]:
        step = st.get("step")
        if not (isinstance(step, (int, np.integer)) and not isinstance(step, bool) and step >= 0):
            raise ValueError(f"Adam state 'step' must be an int >= 0, got {step!r}")
        for key in ("exp_avg", "exp_avg_sq"):
            v = st.get(key)
            if not isinstance(v, np.ndarray) or v.shape != p.shape:
                got = v.shape if isinstance(v, np.ndarray) else type(v).__name__
                raise ValueError(f"Adam state {key!r} must be an array of shape {p.shape}, "
                                 f"got {got}")
        return {"step": int(step), **{k: np.array(st[k], dtype=p.dtype)
                                      for k in ("exp_avg", "exp_avg_sq")}}

    def step(self) -> None:
        for group, p, g in self._params():
            lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            state = self.state.get(id(p))
            if state is None:
                state = self.state[id(p)] = {
                    "step": 0, "exp_avg": np.zeros_like(p.data), "exp_avg_sq": np.zeros_like(p.data)
                }
            if wd:
                if self.decoupled:
                    p.data *= 1.0 - lr * wd
                else:
                    g = g + wd * p.data
            state["step"] += 1
            t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
            m *= b1
            m += (1.0 - b1) * g
            v *= b2
            v += (1.0 - b2) * g * g
            step_size = lr / (1.0 - b1**t)
            denom = np.sqrt(v) / math.sqrt(1.0 - b2**t) + eps
            p.data -= step_size * (m / denom)


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr*wd before the Adam update
    (torch.optim.AdamW)."""

    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2):
        super().__init__(params, lr, betas, eps, weight_decay)
