"""torch.amp: GradScaler and autocast, as a CPU-only torch has them.

GradScaler('cpu') scales the loss and unscales the gradients as torch's (a float32 scale, the
step skipped when a gradient is inf or nan, growth and backoff in update); GradScaler('cuda'),
torch's default, disables itself with torch's warning, since no CUDA device exists, and then
passes everything through. autocast is accepted and computes in the tensors' own dtypes: a
deliberate difference (torch's CPU autocast runs matmuls in bfloat16, which minitorch lacks).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np

from .engine import Tensor, no_grad
from .engine.dtypes import UnsupportedDType, bfloat16

_DEVICES = ("cpu", "cuda")


def _device(name: str, device: Any) -> str:
    kind = str(device).split(":")[0]
    if kind not in _DEVICES:
        raise RuntimeError(f"{name}: unknown device_type {device!r} (minitorch: 'cpu' or 'cuda')")
    return kind


class GradScaler:
    """torch.amp.GradScaler(device='cuda', init_scale=2**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True)."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        self._device = _device("GradScaler", device)
        if enabled and self._device == "cuda":
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)
        if enabled:
            if not growth_factor > 1.0 or not 0.0 < backoff_factor < 1.0:
                raise ValueError(f"GradScaler: growth_factor ({growth_factor}) must be > 1 and "
                                 f"backoff_factor ({backoff_factor}) in (0, 1)")
        self._scale = np.float32(init_scale)
        self._growth_factor, self._backoff_factor = growth_factor, backoff_factor
        self._growth_interval, self._growth_tracker = growth_interval, 0
        self._found_inf: dict[int, bool] = {}  # id(optimizer) -> inf/nan seen when unscaling
        self._stepped: set[int] = set()

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        return float(self._scale) if self._enabled else 1.0

    def scale(self, outputs: Any) -> Any:
        """outputs (a tensor, or nested lists/tuples of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * Tensor(np.asarray(self._scale))
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("GradScaler.scale: outputs must be a Tensor or a list/tuple of them")

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale, in place, once per step."""
        if not self._enabled:
            return
        key = id(optimizer)
        if key in self._stepped:
            raise RuntimeError("unscale_() is being called after step().")
        if key in self._found_inf:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        inv = np.float32(1.0 / np.float64(self._scale))  # torch: reciprocal in double, as float
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        found |= not np.isfinite(p.grad.data).all()
                        p.grad.mul_(Tensor(np.asarray(inv)))
        self._found_inf[key] = found

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(), unless a gradient was inf or nan (then the step is skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        key = id(optimizer)
        if key in self._stepped:
            raise RuntimeError("step() has already been called since the last update().")
        if key not in self._found_inf:
            self.unscale_(optimizer)
        self._stepped.add(key)
        return None if self._found_inf[key] else optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | None = None) -> None:
        """Back off the scale if any step saw inf/nan, else grow it every growth_interval."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = np.float32(new_scale)
        elif any(self._found_inf.values()):
            self._scale = np.float32(self._scale * np.float32(self._backoff_factor))
            self._growth_tracker = 0
        elif self._found_inf:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale = np.float32(self._scale * np.float32(self._growth_factor))
                self._growth_tracker = 0
        self._found_inf.clear()
        self._stepped.clear()

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {"scale": float(self._scale), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state: dict) -> None:
        if not self._enabled:
            return
        if not state:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._scale = np.float32(state["scale"])
        self._growth_factor, self._backoff_factor = state["growth_factor"], state["backoff_factor"]
        self._growth_interval = state["growth_interval"]
        self._growth_tracker = state["_growth_tracker"]


class autocast:  # noqa: N801  (torch's name)
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None), a context
    manager and decorator. 'cuda' disables itself with torch's warning; 'cpu' is accepted and
    changes nothing: ops compute in their inputs' dtypes (minitorch has no float16/bfloat16)."""

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        kind = _device("autocast", device_type)
        if dtype is not None and not isinstance(dtype, UnsupportedDType) and (
                np.dtype(dtype) not in (np.float32, np.float64)):
            raise RuntimeError(f"autocast: dtype {dtype} is not a floating dtype")
        if kind == "cuda" and enabled:
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          stacklevel=2)
            enabled = False
        self.device, self.fast_dtype = kind, bfloat16 if dtype is None else dtype
        self._enabled = bool(enabled)

    def __enter__(self) -> autocast:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def __call__(self, fn):
        @functools.wraps(fn)
        def autocast_wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return autocast_wrapper


def is_autocast_available(device_type: str) -> bool:
    return _device("is_autocast_available", device_type) == "cpu"


__all__ = ["GradScaler", "autocast", "is_autocast_available"]
