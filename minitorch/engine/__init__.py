"""The autodiff engine: Tensor, the op registry and the reverse-mode traversal."""

from . import ops  # noqa: F401  (registers the primitives)
from .hooks import detect_anomaly
from .registry import COMPOSITES, REGISTRY, Context, Op, composite, register
from .tensor import (
    Generator,
    Tensor,
    apply,
    arange,
    cat,
    default_generator,
    float32,
    float64,
    get_default_dtype,
    int64,
    is_grad_enabled,
    manual_seed,
    no_grad,
    ones,
    ones_like,
    randn,
    set_default_dtype,
    set_grad_enabled,
    stack,
    tensor,
    where,
    zeros,
    zeros_like,
)

__all__ = [
    "COMPOSITES", "REGISTRY", "Context", "Generator", "Op", "Tensor", "apply", "arange", "cat",
    "composite", "default_generator", "detect_anomaly", "float32", "float64", "get_default_dtype",
    "int64", "is_grad_enabled", "manual_seed", "no_grad", "ones", "ones_like", "randn",
    "register", "set_default_dtype", "set_grad_enabled", "stack", "tensor", "where", "zeros",
    "zeros_like",
]
