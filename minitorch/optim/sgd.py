"""SGD with optional momentum, Nesterov momentum and L2 weight decay (torch.optim.SGD semantics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .optimizer import Optimizer, check_hyper


class SGD(Optimizer):
    """p -= lr * buf, where buf = momentum*buf + (1-dampening)*(g + wd*p) (buf = g at step 1).

    Hyperparameters must be finite: lr, momentum, dampening, weight_decay >= 0 (ValueError
    naming the bad one); nesterov needs momentum > 0 and dampening 0, as torch requires.
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))

    def check_group(self, group: dict[str, Any]) -> None:
        for key in ("lr", "momentum", "dampening", "weight_decay"):
            check_hyper("SGD", key, group[key])
        if not isinstance(group["nesterov"], bool):
            raise ValueError(f"SGD: invalid nesterov={group['nesterov']!r}; expected a bool")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(f"SGD: nesterov needs momentum > 0 and dampening 0, got "
                             f"momentum={group['momentum']}, dampening={group['dampening']}")

    def check_state(self, p, st: dict[str, Any]) -> dict[str, Any]:
        buf = st.get("momentum_buffer")
        if buf is not None and (not isinstance(buf, np.ndarray) or buf.shape != p.shape):
            raise ValueError(f"SGD state 'momentum_buffer' must be an array of shape {p.shape}")
        return super().check_state(p, st)

    def step(self) -> None:
        for group, p, g in self._params():
            if group["weight_decay"]:
                g = g + group["weight_decay"] * p.data
            mu = group["momentum"]
            if mu:
                state = self.state.setdefault(id(p), {})
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = g.copy()
                else:
                    buf *= mu
                    buf += (1.0 - group["dampening"]) * g
                g = g + mu * buf if group["nesterov"] else buf
            p.data -= group["lr"] * g
