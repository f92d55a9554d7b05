"""torch.nn.utils: gradient clipping by global norm (clip_grad_norm_) and skip_init. It lives in
nn, as in torch, so that nn needs nothing from optim; optim re-exports it. Clipping scales
`.grad` arrays in place and builds no graph; gradients in one run of a flat gradient buffer
(flat.py) are scaled in one operation."""

from __future__ import annotations

import math

import numpy as np

from ..engine import Tensor
from . import flat, init
from .module import Module

__all__ = ["clip_grad_norm_", "skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """torch's nn.utils.skip_init: module_cls(*args, **kwargs) without its initialization
    (reset_parameters does nothing while it is built): the parameters hold whatever their
    arrays were allocated with (np.empty for drawn ones, as torch's uninitialized memory),
    for the caller to initialize."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise TypeError(f"skip_init: expected a Module class, got {module_cls!r}")
    with init._skip_init():
        return module_cls(*args, **kwargs)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> float:
    """Scale all gradients in place so their joint norm is at most max_norm (torch's
    signature and scale, max_norm / (total + 1e-6) when that is below 1).

    Args:
        parameters: an iterable of tensors, or a single tensor (as torch accepts); those
            without a `.grad` are skipped.
        max_norm: the largest allowed joint norm, finite and >= 0.
        norm_type: the p of the p-norm, > 0, or math.inf for the largest |g|.
        error_if_nonfinite: raise RuntimeError if the total norm is nan or inf.
        foreach: accepted for torch's signature; it only picks torch's kernel.

    Returns:
        The total norm before clipping, as a float (torch returns a 0-d tensor). If it is inf
        or nan nothing is scaled (torch would scale by nan or 0): reporting it is the caller's.
    """
    if not (_is_real(max_norm) and math.isfinite(max_norm) and max_norm >= 0):
        raise ValueError(f"clip_grad_norm_: invalid max_norm={max_norm!r}; expected a finite "
                         "number in [0, inf)")
    if not (_is_real(norm_type) and norm_type > 0):  # nan fails here too
        raise ValueError(f"clip_grad_norm_: invalid norm_type={norm_type!r}; expected a number "
                         "> 0, or math.inf")
    if isinstance(parameters, Tensor):  # iterating a tensor would yield its rows, not itself
        parameters = [parameters]
    params = [p for p in parameters if p.grad is not None]
    grads = [p.grad.data for p in params]
    if not grads:
        return 0.0
    total = _total_norm(grads, float(norm_type))
    if not math.isfinite(total):
        if error_if_nonfinite:
            raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the "
                               f"gradients is {total}, so it cannot be clipped")
        return total  # non-finite gradients are the caller's to report, not to scale
    coef = max_norm / (total + 1e-6)
    if coef < 1.0:
        run = flat.flat_run(params)
        if run is not None:
            fg, first, stop = run
            fg.grad[fg.offsets[first]:fg.offsets[stop]] *= coef
        else:
            for g in grads:
                g *= coef
    return total


def _total_norm(grads: list[np.ndarray], p: float) -> float:
    """The p-norm of all gradients' elements together (the norm of the per-tensor norms)."""
    if p == 2.0:
        return math.sqrt(sum(float(np.vdot(g, g)) for g in grads))
    if p == math.inf:
        return max(float(np.abs(g).max()) if g.size else 0.0 for g in grads)
    return sum(float(np.sum(np.abs(g, dtype=np.float64) ** p)) for g in grads) ** (1.0 / p)


def _is_real(v) -> bool:
    return (isinstance(v, (int, float, np.integer, np.floating))
            and not isinstance(v, (bool, np.bool_)))
