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

    def _param_step(self, group: dict[str, Any], p, g: np.ndarray) -> None:
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p.data
        mu = group["momentum"]
        if mu:
            state = self.state.setdefault(id(p), {})
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = self._state_array(p, "momentum_buffer", like=g)
            else:
                buf *= mu
                buf += (1.0 - group["dampening"]) * g
            g = g + mu * buf if group["nesterov"] else buf
        p.data -= group["lr"] * g

    def _flat_ready(self, group: dict[str, Any], fg, first: int, stop: int) -> bool:
        """Whether the group's state allows one flat update: no momentum, or no buffers yet,
        or every buffer is the parameter's view of the flat momentum buffer."""
        if not group["momentum"]:
            return True
        views = self._moments(fg, "momentum_buffer")[1]
        bufs = [self.state.get(id(p), {}).get("momentum_buffer") for p in group["params"]]
        return all(b is None for b in bufs) or all(
            b is views[i] for b, i in zip(bufs, range(first, stop)))

    def _flat_step(self, group: dict[str, Any], fg, first: int, stop: int) -> None:
        """_param_step on the group's slice of the flat buffers, a chunk at a time, with
        the same operations in the same order (so the same bits), into two chunk-sized
        temporaries allocated once per step."""
        lr, mu, wd = group["lr"], group["momentum"], group["weight_decay"]
        params = group["params"]
        self._bump_versions(params)
        first_step = False
        if mu:
            first_step = self.state.get(id(params[0]), {}).get("momentum_buffer") is None
            buf_all, views = self._moments(fg, "momentum_buffer")
            for p, i in zip(params, range(first, stop)):
                self.state.setdefault(id(p), {})["momentum_buffer"] = views[i]
        start, end = fg.offsets[first], fg.offsets[stop]
        for lo, hi, tmp, tmp_g in self._chunks(fg, start, end, bool(wd)):
            p, g = fg.data[lo:hi], fg.grad[lo:hi]
            if wd:
                np.multiply(p, wd, out=tmp_g)
                g = np.add(g, tmp_g, out=tmp_g)  # g + wd*p
            if mu:
                buf = buf_all[lo:hi]
                if first_step:
                    np.copyto(buf, g)
                else:
                    buf *= mu
                    buf += np.multiply(g, 1.0 - group["dampening"], out=tmp)
                if group["nesterov"]:
                    np.multiply(buf, mu, out=tmp)
                    g = np.add(g, tmp, out=tmp)  # g + mu*buf
                else:
                    g = buf
            p -= np.multiply(g, lr, out=tmp)
