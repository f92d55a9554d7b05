"""Gradient clipping by global L2 norm (torch.nn.utils.clip_grad_norm_ semantics); gradients
in one run of a flat gradient buffer (nn/flat.py) are scaled in one operation."""

from __future__ import annotations

import math

import numpy as np

from ..engine import Tensor
from ..nn import flat
from .optimizer import check_hyper


def clip_grad_norm_(parameters, max_norm: float, eps: float = 1e-6) -> float:
    """Scale all gradients in place so their joint L2 norm is at most max_norm.

    Args:
        parameters: an iterable of tensors, or a single tensor (as torch accepts).
        max_norm: the largest allowed joint norm.

    Returns:
        The total norm before clipping (inf or nan if a gradient is; nothing is scaled then).
    """
    check_hyper("clip_grad_norm_", "max_norm", max_norm)
    if isinstance(parameters, Tensor):  # iterating a tensor would yield its rows, not itself
        parameters = [parameters]
    params = [p for p in parameters if p.grad is not None]
    grads = [p.grad.data for p in params]
    if not grads:
        return 0.0
    total = math.sqrt(sum(float(np.vdot(g, g)) for g in grads))
    if not math.isfinite(total):
        return total  # non-finite gradients are the caller's to report, not to scale
    coef = max_norm / (total + eps)
    if coef < 1.0:
        run = flat.flat_run(params)
        if run is not None:
            fg, first, stop = run
            fg.grad[fg.offsets[first]:fg.offsets[stop]] *= coef
        else:
            for g in grads:
                g *= coef
    return total
