"""The autodiff engine: Tensor, the op registry, the reverse-mode traversal, and the pure
forward kernels (kernels.py) that ops and graph-free inference share."""

from . import ops  # noqa: F401  (registers the primitives)
from .creation import (
    Generator,
    arange,
    cat,
    default_generator,
    manual_seed,
    ones,
    ones_like,
    randn,
    stack,
    tensor,
    where,
    zeros,
    zeros_like,
)
from .dtypes import (
    float32,
    float64,
    get_default_dtype,
    int64,
    promote,
    promote_types,
    set_default_dtype,
)
from .hooks import detect_anomaly, is_grad_enabled, no_grad, set_grad_enabled
from .registry import COMPOSITES, REGISTRY, Context, Op, composite, register
from .tensor import Tensor, apply

__all__ = [
    "COMPOSITES", "REGISTRY", "Context", "Generator", "Op", "Tensor", "apply", "arange", "cat",
    "composite", "default_generator", "detect_anomaly", "float32", "float64", "get_default_dtype",
    "int64", "is_grad_enabled", "manual_seed", "no_grad", "ones", "ones_like", "promote",
    "promote_types", "randn", "register", "set_default_dtype", "set_grad_enabled", "stack",
    "tensor", "where", "zeros", "zeros_like",
]
