"""SGD with optional momentum, Nesterov momentum and L2 weight decay (torch.optim.SGD semantics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .optimizer import Optimizer, check_flags, check_hyper


def sgd(p, g, s, temps, *, lr, momentum, dampening, wd, nesterov, maximize, first):
    """One SGD step on arrays (p and s's buffer in place; g read only): d = g + wd*p;
    buf = d at the first step, else momentum*buf + (1-dampening)*d; p -= lr * (d + momentum*buf
    if nesterov else buf), or p -= lr*d without momentum. temps: 1 array like p, 2 with maximize
    or weight decay."""
    tmp = temps[0]
    if maximize:
        g = np.negative(g, out=temps[1])
    if wd:
        np.multiply(p, wd, out=tmp)
        g = np.add(g, tmp, out=temps[1])  # g + wd*p
    if momentum:
        buf = s["momentum_buffer"]
        if first:
            np.copyto(buf, g)
        else:
            buf *= momentum
            buf += np.multiply(g, 1.0 - dampening, out=tmp)
        if nesterov:
            np.multiply(buf, momentum, out=tmp)
            g = np.add(g, tmp, out=tmp)  # g + momentum*buf
        else:
            g = buf
    p -= np.multiply(g, lr, out=tmp)


class SGD(Optimizer):
    """p -= lr * buf, where buf = momentum*buf + (1-dampening)*(g + wd*p) (buf = g at step 1).

    maximize ascends; foreach and fused (torch's implementation flags) give the same result;
    differentiable is refused at step() as torch refuses it for leaf parameters.
    Hyperparameters must be finite: lr, momentum, dampening, weight_decay >= 0 (ValueError
    naming the bad one); nesterov needs momentum > 0 and dampening 0, as torch requires.
    """

    rule = staticmethod(sgd)

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    def check_group(self, group: dict[str, Any]) -> None:
        for key in ("lr", "momentum", "dampening", "weight_decay"):
            check_hyper("SGD", key, group[key])
        if not isinstance(group["nesterov"], bool):
            raise ValueError(f"SGD: invalid nesterov={group['nesterov']!r}; expected a bool")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(f"SGD: nesterov needs momentum > 0 and dampening 0, got "
                             f"momentum={group['momentum']}, dampening={group['dampening']}")
        check_flags("SGD", group)

    def check_state(self, p, st: dict[str, Any]) -> dict[str, Any]:
        buf = st.get("momentum_buffer")
        if buf is not None and (not isinstance(buf, np.ndarray) or buf.shape != p.shape):
            raise ValueError(f"SGD state 'momentum_buffer' must be an array of shape {p.shape}")
        return super().check_state(p, st)

    def _keys(self, group: dict[str, Any]) -> tuple[str, ...]:
        return ("momentum_buffer",) if group["momentum"] else ()

    def _temps(self, group: dict[str, Any]) -> int:
        return 2 if group["maximize"] or group["weight_decay"] else 1

    def _hyper(self, group: dict[str, Any], states: list[dict[str, Any]]) -> dict[str, Any]:
        return dict(lr=group["lr"], momentum=group["momentum"], dampening=group["dampening"],
                    wd=group["weight_decay"], nesterov=group["nesterov"],
                    maximize=group["maximize"],
                    first=states[0].get("momentum_buffer") is None)
