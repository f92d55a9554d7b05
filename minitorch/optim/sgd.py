"""SGD with optional momentum, Nesterov momentum and L2 weight decay (torch.optim.SGD semantics)."""

from __future__ import annotations

from .optimizer import Optimizer


class SGD(Optimizer):
    """p -= lr * buf, where buf = momentum*buf + (1-dampening)*(g + wd*p) (buf = g at step 1)."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False):
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f"SGD: invalid lr={lr}, momentum={momentum}, wd={weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError(f"SGD: nesterov needs momentum > 0 and dampening 0, got "
                             f"momentum={momentum}, dampening={dampening}")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))

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
