"""The autodiff engine: Tensor, the op registry, the reverse-mode traversal, and the pure
forward kernels (kernels.py) that ops and graph-free inference share."""

from . import functions, ops  # noqa: F401  (ops: registers the primitives)
from .dtypes import (
    UnsupportedDType,
    bfloat16,
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote,
    promote_types,
    set_default_dtype,
    uint8,
)
from .factories import (
    Generator,
    arange,
    as_tensor,
    default_generator,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    manual_seed,
    multinomial,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from .functions import *  # noqa: F403  (torch.exp, torch.matmul, ...: methods as functions)
from .functions import allclose, cat, equal, isclose, outer, stack, topk, tril, triu  # noqa: F401
from .registry import COMPOSITES, REGISTRY, Context, Op, composite, register
from .runtime import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .tensor import Tensor, apply, where

# torch's dtype names (not in __all__: `from minitorch import *` must not shadow bool and float)
bool, long, double, float = bool_, int64, float64, float32  # noqa: A001
half, int, short = float16, int32, int16  # noqa: A001
cfloat, cdouble = complex64, complex128
# torch.abs, torch.max, ...: named like Python builtins, so attributes only, not in __all__ either
abs, all, any, max, min, pow, round, sum = (  # noqa: A001
    functions.abs, functions.all, functions.any, functions.max, functions.min, functions.pow,
    functions.round, functions.sum)

__all__ = [
    "COMPOSITES", "REGISTRY", "Context", "Generator", "UnsupportedDType", "bfloat16",
    "complex64", "complex128", "float16", "int8", "int16", "int32", "uint8", "Op", "Tensor",
    "apply",
    "arange", "as_tensor", "composite", "default_generator", "detect_anomaly", "empty",
    "empty_like", "enable_grad", "eye", "float32", "float64", "from_numpy", "full",
    "full_like", "get_default_dtype", "inference_mode", "int64", "is_grad_enabled",
    "linspace", "manual_seed", "multinomial", "no_grad", "ones", "ones_like",
    "promote", "promote_types", "rand", "rand_like", "randint", "randint_like", "randn",
    "randn_like", "randperm", "register", "set_default_dtype", "set_grad_enabled",
    "tensor", "where", "zeros", "zeros_like",
]
__all__ += functions.__all__  # (not the builtins' names: see functions.py)
