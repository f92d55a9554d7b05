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

    def _param_step(self, group: dict[str, Any], p, g: np.ndarray) -> None:
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        state = self.state.get(id(p))
        if state is None:
            state = self.state[id(p)] = {"step": 0, "exp_avg": self._state_array(p, "exp_avg"),
                                         "exp_avg_sq": self._state_array(p, "exp_avg_sq")}
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

    def _flat_ready(self, group: dict[str, Any], fg, first: int, stop: int) -> bool:
        """Whether the group's state allows one flat update: none yet (created here, as views
        of the flat moments), or every parameter's moments are those views, at one step."""
        params = group["params"]
        m_buf, m_views = self._moments(fg, "exp_avg")
        v_buf, v_views = self._moments(fg, "exp_avg_sq")
        states = [self.state.get(id(p)) for p in params]
        if all(st is None for st in states):
            lo, hi = fg.offsets[first], fg.offsets[stop]
            m_buf[lo:hi], v_buf[lo:hi] = 0, 0
            for p, i in zip(params, range(first, stop)):
                self.state[id(p)] = {"step": 0, "exp_avg": m_views[i], "exp_avg_sq": v_views[i]}
            return True
        return all(st is not None and st["step"] == states[0]["step"]
                   and st["exp_avg"] is m_views[i] and st["exp_avg_sq"] is v_views[i]
                   for st, i in zip(states, range(first, stop)))

    def _flat_step(self, group: dict[str, Any], fg, first: int, stop: int) -> None:
        """_param_step on the group's slice of the flat buffers, a chunk at a time, with
        the same operations in the same order (so the same bits), into one chunk-sized
        temporary allocated once per step (two with coupled weight decay)."""
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        params = group["params"]
        self._bump_versions(params)
        for p in params:
            self.state[id(p)]["step"] += 1
        t = self.state[id(params[0])]["step"]
        step_size = lr / (1.0 - b1**t)
        bias2 = math.sqrt(1.0 - b2**t)
        m_all, v_all = self._moments(fg, "exp_avg")[0], self._moments(fg, "exp_avg_sq")[0]
        start, end = fg.offsets[first], fg.offsets[stop]
        coupled = bool(wd) and not self.decoupled  # g + wd*p needs a second temporary
        for lo, hi, tmp, tmp_g in self._chunks(fg, start, end, coupled):
            p, g, m, v = fg.data[lo:hi], fg.grad[lo:hi], m_all[lo:hi], v_all[lo:hi]
            if wd:
                if self.decoupled:
                    p *= 1.0 - lr * wd
                else:
                    np.multiply(p, wd, out=tmp_g)
                    g = np.add(g, tmp_g, out=tmp_g)  # g + wd*p
            m *= b1
            m += np.multiply(g, 1.0 - b1, out=tmp)
            v *= b2
            np.multiply(g, 1.0 - b2, out=tmp)
            v += np.multiply(tmp, g, out=tmp)  # (1-b2)*g*g
            np.sqrt(v, out=tmp)
            tmp /= bias2
            tmp += eps  # denom
            np.divide(m, tmp, out=tmp)
            p -= np.multiply(tmp, step_size, out=tmp)


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr*wd before the Adam update
    (torch.optim.AdamW)."""

    decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2):
        super().__init__(params, lr, betas, eps, weight_decay)
