"""Adam and AdamW (decoupled weight decay), in the exact arithmetic order of torch.optim.Adam."""

from __future__ import annotations

import math

import numpy as np

from .optimizer import Optimizer


class Adam(Optimizer):
    """m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
    p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).

    weight_decay adds wd*p to the gradient (L2, as torch.optim.Adam).
    """

    decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0):
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError(f"{type(self).__name__}: invalid lr={lr}, betas={betas}, eps={eps}, "
                             f"weight_decay={weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay))

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
