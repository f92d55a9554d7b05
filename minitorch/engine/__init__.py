"""The autodiff engine: Tensor, the op registry, the reverse-mode traversal, and the pure
forward kernels (kernels.py) that ops and graph-free inference share."""

from . import ops  # noqa: F401  (registers the primitives)
from .creation import (
    Generator,
    arange,
    cat,
    default_generator,
    empty,
    from_numpy,
    full,
    manual_seed,
    multinomial,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    stack,
    tensor,
    topk,
    tril,
    triu,
    where,
    zeros,
    zeros_like,
)
from .dtypes import (
    bool_,
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

# torch's dtype names (not in __all__: `from minitorch import *` must not shadow bool and float)
bool, long, double, float = bool_, int64, float64, float32  # noqa: A001

__all__ = [
    "COMPOSITES", "REGISTRY", "Context", "Generator", "Op", "Tensor", "apply", "arange", "cat",
    "composite", "default_generator", "detect_anomaly", "empty", "float32", "float64",
    "from_numpy", "full", "get_default_dtype", "int64", "is_grad_enabled", "manual_seed",
    "multinomial", "no_grad", "ones", "ones_like", "promote", "promote_types", "rand", "randint",
    "randn", "register", "set_default_dtype", "set_grad_enabled", "stack", "tensor", "topk",
    "tril", "triu", "where", "zeros", "zeros_like",
]
