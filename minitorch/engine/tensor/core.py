"""Tensor's core: an np.ndarray plus the autograd record (`_ctx`), backward, `to`, and `apply`,
the one way ops run. Every other method lives in its family's mixin (interop.py, arithmetic.py,
pointwise.py, reduce.py, movement.py, indexing.py, inplace.py), as the ops do in engine/ops/ and
their specs in verification/specs/; none of them computes a gradient itself.
dtype rule (dtypes.py): ops preserve dtype; inputs are promoted as torch does (float32 meeting
float64 is float64, unless the float64 side is 0-d), a Python scalar takes the dtype of the
floating tensor it meets, and the floating ops compute integer and bool inputs in the default
dtype.
"""

from __future__ import annotations

import math
import operator
import time
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import graph, runtime
from ..dtypes import get_default_dtype, is_float, parse_to
from ..kernels import ArgumentError
from ..node import Context
from ..registry import REGISTRY, Op
from .arithmetic import Arithmetic
from .base import retold
from .indexing import Indexing
from .inplace import InPlace
from .interop import Interop
from .linalg import Linalg
from .movement import Movement
from .pointwise import Pointwise
from .reduce import Reduce


def apply(op: type[Op], *inputs: Tensor, **attrs: Any) -> Tensor:
    """Run `op` forward on the inputs' arrays; if any input needs a gradient, record the node."""
    local = runtime.local
    needs = tuple([t.requires_grad for t in inputs]) if (
        local.grad_enabled and op.differentiable) else (False,) * len(inputs)
    if True in needs:  # each input's node: its producer's Context, the leaf Tensor, or None
        ctx = Context(op, tuple([(t._ctx or t) if n else None for t, n in zip(inputs, needs)]),
                      needs)
    else:  # the short path: no graph, so no parents to collect
        ctx = Context(op, (), needs)
    start = time.perf_counter() if runtime.forward_hooks else 0.0
    try:
        out = np.asarray(op.forward(ctx, *[t._data for t in inputs], **attrs))  # never np scalar
    except (ValueError, IndexError, TypeError) as e:
        shapes = ", ".join(str(t.shape) for t in inputs)
        raise retold(e, f"op '{op.name}' on inputs of shape {shapes}: {e}") from None
    if runtime.anomaly_enabled and is_float(out.dtype) and not np.isfinite(out).all():
        _forward_anomaly(op, inputs, out, attrs)
    record = ctx.recording and is_float(out.dtype)  # integer outputs never require grad
    if record:
        ctx.out_shape, ctx.out_dtype = out.shape, out.dtype
    result = Tensor._make(out, ctx if record else None)
    if local.tape is not None:
        local.tape.record(op, inputs, attrs, ctx if record else None, result)
    if runtime.forward_hooks:
        elapsed = time.perf_counter() - start
        for hook in runtime.forward_hooks:
            hook(op, inputs, result, elapsed)
    return result


def _forward_anomaly(op: type[Op], inputs: Sequence[Tensor], out: np.ndarray, attrs: dict) -> None:
    """Raise if this op is the first to produce NaN (no input had NaN) or inf (no input had inf
    and the caller did not ask for one, as masked_fill(value=-inf) does)."""
    arrays = [t.data for t in inputs if is_float(t.dtype)]
    asked_inf = any(isinstance(v, float) and math.isinf(v) for v in attrs.values())
    if np.isnan(out).any() and not any(np.isnan(a).any() for a in arrays):
        raise FloatingPointError(f"anomaly: forward of op '{op.name}' produced NaN")
    if np.isinf(out).any() and not asked_inf and not any(np.isinf(a).any() for a in arrays):
        raise FloatingPointError(f"anomaly: forward of op '{op.name}' produced inf")



class Tensor(Interop, Arithmetic, Linalg, Pointwise, Reduce, Movement, Indexing, InPlace):
    """An n-dimensional array that records the ops applied to it, for reverse-mode autodiff.

    Args:
        data: array-like; float data keeps float32/float64, Python floats get the default dtype.
        requires_grad: whether backward should fill `.grad` (floating tensors only).
        dtype: optional dtype to convert to.
    """

    __slots__ = ("_data", "grad", "requires_grad", "_ctx", "__weakref__")
    # A flat-stored Parameter's place in its buffer (nn/flat.py), else None: anything whose
    # `new_grad(data)` gives an array for the first gradient, or None.
    _flat = None

    def __init__(self, data: Any, requires_grad: bool = False, dtype: Any = None):
        self.data = _as_array(data, dtype)
        self.grad: Tensor | None = None
        self._ctx: Context | None = None
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _make(cls, data: np.ndarray, ctx: Context | None) -> Tensor:
        t = cls.__new__(cls)
        t._data, t.grad, t._ctx, t.requires_grad = data, None, ctx, ctx is not None
        return t

    # The values, a NumPy array (torch's .data is a detached tensor: see the README). Assigning
    # a Tensor stores its array, so torch's `p.data = p.data - lr * p.grad` updates p.
    data = property(operator.attrgetter("_data"))

    @data.setter
    def data(self, value: Any) -> None:
        if isinstance(value, Tensor):
            value = value._data
        elif isinstance(value, np.generic):  # arithmetic on a 0-d array gives a NumPy scalar
            value = np.asarray(value)
        if not isinstance(value, np.ndarray):
            raise TypeError(f"Tensor.data must be a NumPy array or a Tensor, got "
                            f"{type(value).__name__}")
        self._data = value

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def is_leaf(self) -> bool:
        return self._ctx is None

    @property
    def grad_fn(self) -> str | None:
        """Name of the op that produced this tensor (None for leaves)."""
        return None if self._ctx is None else self._ctx.op.name

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self) -> int:
        return self._data.ndim

    def nelement(self) -> int:
        return self.numel()

    def numel(self) -> int:
        return int(self._data.size)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return len(self.data)

    def __iter__(self):
        if self.ndim == 0:  # else Python would iterate by indexing and stop at once, silently
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        extra = f", grad_fn={self.grad_fn}" if self._ctx else (
            ", requires_grad=True" if self.requires_grad else "")
        return f"tensor({np.array2string(self.data, precision=4)}, dtype={self.dtype}{extra})"

    def retain_grad(self) -> None:
        """Fill this non-leaf tensor's .grad at backward (accumulating, as a leaf's), as torch's;
        a no-op on a leaf."""
        if not self.requires_grad:
            raise RuntimeError("retain_grad() on a tensor that has requires_grad=False (as torch)")
        if self._ctx is not None:
            self._ctx.retained = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        kept = self._ctx.retained if self._ctx is not None else None
        return kept is not None and kept() is self

    def requires_grad_(self, mode: bool = True) -> Tensor:
        if mode and not is_float(self.dtype):
            raise TypeError(
                f"only float32/float64 tensors can require gradients, got dtype {self.dtype}"
            )
        self.requires_grad = mode
        return self

    def backward(self, grad: Any = None, retain_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into `.grad` of every leaf that requires grad.

        Args:
            grad: gradient w.r.t. self, same shape; may be omitted only for a one-element tensor.
            retain_graph: keep the graph so backward can run through it again.
        """
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad (no graph)")
        if grad is None:
            if self.data.size != 1:
                raise RuntimeError(
                    f"backward() on a non-scalar tensor of shape {self.shape} needs an explicit "
                    "`grad` of the same shape"
                )
            seed = np.ones(self.shape, dtype=self.dtype)
        else:
            seed = np.asarray(grad.data if isinstance(grad, Tensor) else grad, dtype=self.dtype)
            if seed.shape != self.shape:
                raise ArgumentError(
                    f"backward(): grad shape {seed.shape} != tensor shape {self.shape}")
        graph.backward(self, seed, retain_graph=retain_graph)

    def accumulate_grad(self, grad: np.ndarray) -> None:
        """`.grad += grad`, in place as torch does; the first gradient is copied so the leaf owns
        its array (into its view of a flat gradient buffer when it has one). Called by the
        engine's traversal on leaves that require grad."""
        if self.grad is None:
            view = None if self._flat is None else self._flat.new_grad(self.data)
            if view is None:
                self.grad = Tensor._make(np.array(grad, dtype=self.dtype, copy=True), None)
            else:
                np.copyto(view, grad)
                self.grad = Tensor._make(view, None)
        elif self.grad.data.flags.writeable:
            np.add(self.grad.data, grad, out=self.grad.data)
        else:  # .grad was saved by a live graph (used in a forward): accumulate out of place
            self.grad.data = self.grad.data + grad

    def detach(self) -> Tensor:
        """A new leaf sharing the data, cut from the graph."""
        return Tensor._make(self.data, None)

    def zero_grad(self) -> None:
        self.grad = None

    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False) -> Tensor:
        """torch's .to: to(dtype), to(device, dtype) or to(other), each followed by non_blocking
        and copy (positional or keyword): a cast (differentiable), or self; copy=True always
        gives a new tensor. non_blocking changes nothing on the CPU."""
        flags = []
        while args and isinstance(args[-1], bool):  # torch's trailing (non_blocking, copy)
            flags.insert(0, args[-1])
            args = args[:-1]
        if len(flags) > 2:
            raise TypeError(f"to(): too many arguments ({len(flags)} flags after the dtype)")
        copy = copy or (len(flags) == 2 and flags[1])
        dtype = parse_to(*args, dtype=dtype, device=device)
        if dtype is None or dtype == self.dtype:
            return self.clone() if copy else self
        return apply(REGISTRY["astype"], self, dtype=dtype)

    def cpu(self) -> Tensor:
        return self

    @property
    def device(self) -> str:
        return "cpu"

    def is_floating_point(self) -> bool:
        return is_float(self.dtype)

    def __getattr__(self, name: str):
        """Only reached for a name Tensor lacks: say so, naming torch's method."""
        raise AttributeError(f"'Tensor' object has no attribute {name!r} (torch.Tensor.{name}: "
                             "minitorch does not have it)")

    # the hooks the family mixins reach the rest through (base.TensorBase)
    @staticmethod
    def _apply(name: str, *inputs: Tensor, **attrs: Any) -> Tensor:
        return apply(REGISTRY[name], *inputs, **attrs)

    @staticmethod
    def _wrap(array: np.ndarray) -> Tensor:
        return Tensor._make(array, None)

    @staticmethod
    def _lift(data: Any, dtype: Any = None) -> Tensor:
        return Tensor(data, dtype=dtype)


def _as_array(data: Any, dtype: Any = None) -> np.ndarray:
    if isinstance(data, Tensor):
        data = data.data
    if dtype is not None:
        return np.asarray(data, dtype=dtype)
    arr = np.asarray(data)
    if arr.dtype.kind == "f":
        if not isinstance(data, np.ndarray) and not isinstance(data, np.generic):
            arr = arr.astype(get_default_dtype())  # Python floats get the default dtype
        elif arr.dtype not in (np.float32, np.float64):
            arr = arr.astype(np.float32)
    elif arr.dtype.kind in "iu":
        arr = arr.astype(np.int64, copy=False)
    elif arr.dtype.kind != "b":
        raise TypeError(f"cannot make a tensor from data of dtype {arr.dtype}")
    return arr
