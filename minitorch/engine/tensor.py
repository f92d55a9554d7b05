"""Tensor: an np.ndarray plus the autograd record (`_ctx`), and `apply`, the one way ops run.

Tensor methods are thin fronts onto registered ops; none of them computes a gradient itself.
dtype rule (dtypes.py): ops preserve dtype; inputs are promoted as torch does (float32 meeting
float64 is float64, unless the float64 side is 0-d), a Python scalar takes the dtype of the
floating tensor it meets, and the floating ops (exp, sqrt, true division, ...) compute integer
and bool inputs in the default dtype. Factories and cat/stack/where live in creation.py.
"""

from __future__ import annotations

import functools
import math
import operator
import sys
import time
import weakref
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import graph, hooks
from .dtypes import get_default_dtype, is_float, parse_to, promote
from .registry import REGISTRY, Context, Op, inplace, saved_holds

MaxResult = namedtuple("MaxResult", ["values", "indices"])
SortResult = namedtuple("SortResult", ["values", "indices"])


def apply(op: type[Op], *inputs: Tensor, **attrs: Any) -> Tensor:
    """Run `op` forward on the inputs' arrays; if any input needs a gradient, record the node."""
    needs = (
        tuple(t.requires_grad for t in inputs)
        if hooks.local.grad_enabled and op.differentiable
        else (False,) * len(inputs)
    )
    # each input's graph node: its producer's Context, or the leaf Tensor; None if no grad needed
    ctx = Context(op, tuple((t._ctx or t) if n else None for t, n in zip(inputs, needs)), needs)
    start = time.perf_counter() if hooks.forward_hooks else 0.0
    try:
        out = np.asarray(op.forward(ctx, *[t._data for t in inputs], **attrs))  # never np scalar
    except (ValueError, IndexError, TypeError) as e:
        shapes = ", ".join(str(t.shape) for t in inputs)
        raise _retold(e, f"op '{op.name}' on inputs of shape {shapes}: {e}") from None
    if hooks.anomaly_enabled and is_float(out.dtype) and not np.isfinite(out).all():
        _forward_anomaly(op, inputs, out, attrs)
    record = ctx.recording and is_float(out.dtype)  # integer outputs never require grad
    if record:
        ctx.out_shape, ctx.out_dtype = out.shape, out.dtype
    result = Tensor._make(out, ctx if record else None)
    if hooks.local.tape is not None:
        hooks.local.tape.record(op, inputs, attrs, ctx if record else None, result)
    if hooks.forward_hooks:
        elapsed = time.perf_counter() - start
        for hook in hooks.forward_hooks:
            hook(op, inputs, result, elapsed)
    return result


def _retold(e: Exception, message: str) -> Exception:
    """An error of e's kind saying `message`: e's class, or the built-in kind it derives from
    when that class takes other arguments (NumPy's casting errors take the ufunc and dtypes)."""
    try:
        return type(e)(message)
    except TypeError:
        return next(k for k in type(e).__mro__ if k in (ValueError, IndexError, TypeError))(message)


def _forward_anomaly(op: type[Op], inputs: Sequence[Tensor], out: np.ndarray, attrs: dict) -> None:
    """Raise if this op is the first to produce NaN (no input had NaN) or inf (no input had inf
    and the caller did not ask for one, as masked_fill(value=-inf) does)."""
    arrays = [t.data for t in inputs if is_float(t.dtype)]
    asked_inf = any(isinstance(v, float) and math.isinf(v) for v in attrs.values())
    if np.isnan(out).any() and not any(np.isnan(a).any() for a in arrays):
        raise FloatingPointError(f"anomaly: forward of op '{op.name}' produced NaN")
    if np.isinf(out).any() and not asked_inf and not any(np.isinf(a).any() for a in arrays):
        raise FloatingPointError(f"anomaly: forward of op '{op.name}' produced inf")


def numpy_aliases(method):
    """torch's NumPy-style keyword aliases on a method that takes a dim: axis= for dim= and
    keepdims= for keepdim= (x.sum(axis=1, keepdims=True) runs in torch)."""

    @functools.wraps(method)
    def with_aliases(*args, **kwargs):  # (the tensor may come as input=, in torch.sum)
        for alias, name in (("axis", "dim"), ("keepdims", "keepdim")):
            if alias in kwargs:
                if name in kwargs:
                    raise TypeError(f"{method.__name__}(): got both {name}= and its alias "
                                    f"{alias}= (as torch)")
                kwargs[name] = kwargs.pop(alias)
        return method(*args, **kwargs)

    return with_aliases


def _op(name: str) -> type[Op]:
    return REGISTRY[name]


class Tensor:
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

    # ---- attributes -------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim

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
        return self.data.ndim

    def nelement(self) -> int:
        return self.numel()

    def numel(self) -> int:
        return int(self.data.size)

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

    # ---- autograd -----------------------------------------------------------------------
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
                raise ValueError(
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

    def item(self) -> float:
        if self.data.size != 1:
            raise ValueError(f"item(): tensor of shape {self.shape} has {self.data.size} elements")
        return self.data.item()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise RuntimeError(f"bool(): a tensor of shape {self.shape} has {self.data.size} "
                               "elements, so its truth value is ambiguous; use .any() or .all()")
        return bool(self.data.item())

    def __index__(self) -> int:
        if self.data.size != 1 or is_float(self.dtype):
            raise TypeError(f"only a one-element integer tensor can be an index, got shape "
                            f"{self.shape} dtype {self.dtype}")
        return int(self.data.item())

    def __format__(self, spec: str) -> str:
        if self.ndim == 0:  # f"{loss:.3f}", as torch (which formats only 0-d tensors)
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def is_floating_point(self) -> bool:
        return is_float(self.dtype)

    # ---- NumPy meeting a Tensor -------------------------------------------------------------
    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """np.asarray(t), as torch's: the values (refused while t requires grad, as numpy())."""
        a = self.numpy()
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        """A NumPy operator or ufunc with a Tensor operand. An operator with an array or NumPy
        number on the left (`a + t`, `a < t`): the Tensor operation, as `t + a`. Into plain
        arrays (`out=`, and so `p.data += lr * p.grad`, torch's `.data` update): on the values,
        in place. Any other ufunc (np.exp(t)): on the values, wrapped in a Tensor, as torch's."""
        reflected = _REFLECTED.get(ufunc.__name__)
        if (out is None and method == "__call__" and reflected and not kwargs
                and len(inputs) == 2 and not isinstance(inputs[0], Tensor)):
            return getattr(inputs[1], reflected)(inputs[0])
        values = [x.numpy() if isinstance(x, Tensor) else x for x in inputs]
        if out is not None:
            if any(isinstance(o, Tensor) for o in out):
                return NotImplemented  # t += a is Tensor.__iadd__; np.exp(a, out=t) is refused
            return getattr(ufunc, method)(*values, out=out, **kwargs)
        result = getattr(ufunc, method)(*values, **kwargs)
        if isinstance(result, tuple):
            return tuple(Tensor(np.asarray(r)) for r in result)
        return Tensor(np.asarray(result))

    def numpy(self) -> np.ndarray:
        if self.requires_grad:
            raise RuntimeError("numpy() on a tensor that requires grad; use .detach().numpy()")
        return self.data

    def tolist(self):
        return self.data.tolist()

    # ---- dtype --------------------------------------------------------------------------
    def to(self, *args, dtype=None, device=None) -> Tensor:
        """torch's .to: a dtype (cast, differentiable), 'cpu' (itself), or both."""
        dtype = parse_to(*args, dtype=dtype, device=device)
        if dtype is None or dtype == self.dtype:
            return self
        return apply(_op("astype"), self, dtype=dtype)

    def cpu(self) -> Tensor:
        return self

    @property
    def device(self) -> str:
        return "cpu"

    def float(self) -> Tensor:
        return self.to(np.float32)

    def double(self) -> Tensor:
        return self.to(np.float64)

    def long(self) -> Tensor:
        return self.to(np.int64)

    def bool(self) -> Tensor:
        return self.to(np.bool_)

    def int(self) -> Tensor:
        raise TypeError("int(): minitorch has no int32 dtype (integers are int64): use .long()")

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    def new_full(self, size, fill_value, *, dtype=None, device=None,
                 requires_grad: bool = False) -> Tensor:
        """torch's new_full: a new tensor of `size` filled with fill_value, of self's dtype
        unless `dtype` is given (new_zeros, new_ones and new_tensor follow the same rule)."""
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"new_full: size must be a tuple of ints, got {size!r}")
        dtype = parse_to(dtype=dtype, device=device) or self.dtype
        out = Tensor._make(np.full(tuple(size), fill_value, dtype=dtype), None)
        return out.requires_grad_(requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
        return self.new_full(as_shape(size), 0, dtype=dtype, device=device,
                             requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
        return self.new_full(as_shape(size), 1, dtype=dtype, device=device,
                             requires_grad=requires_grad)

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
        """A copy of `data` (a tensor's values are copied, cut from its graph) in self's dtype
        unless `dtype` is given."""
        dtype = parse_to(dtype=dtype, device=device) or self.dtype
        data = data.data if isinstance(data, Tensor) else data
        return Tensor._make(np.array(data, dtype=dtype), None).requires_grad_(requires_grad)

    # ---- binary arithmetic ------------------------------------------------------------
    def _pair(self, other: Any) -> tuple[Tensor, Tensor]:
        """Coerce `other` to a Tensor and unify float dtypes by the module's dtype rule."""
        if isinstance(other, np.generic):  # a NumPy number counts as a Python one, as in torch
            other = other.item()
        if not isinstance(other, Tensor):
            if is_float(self.dtype) and isinstance(other, (int, float, bool)):
                return self, Tensor._make(np.asarray(other, dtype=self.dtype), None)
            other = Tensor(other)
        a, b = promote(self, other)
        return a, b

    def _binary(self, name: str, other: Any, reflected: bool = False) -> Tensor:
        a, b = self._pair(other)
        return apply(_op(name), b, a) if reflected else apply(_op(name), a, b)

    def add(self, other, *, alpha=1): return self._binary("add", _scaled(self, other, alpha))
    def sub(self, other, *, alpha=1): return self._subtract(_scaled(self, other, alpha))

    def _subtract(self, other, reflected: bool = False) -> Tensor:
        if self.dtype == np.bool_ or isinstance(other, bool) or (
                isinstance(other, Tensor) and other.dtype == np.bool_):
            raise TypeError("sub: not defined on bool tensors (as torch): for a mask use ~ or "
                            "logical_not()")
        return self._binary("sub", other, reflected)
    def mul(self, other): return self._binary("mul", other)

    def div(self, other, *, rounding_mode: str | None = None) -> Tensor:
        """True division (integer and bool operands divide in the default dtype, as torch), or
        rounding_mode='floor' (floor_divide) or 'trunc' (rounded toward zero)."""
        if rounding_mode == "floor":
            return self.floor_divide(other)
        if rounding_mode == "trunc":
            a, b = self._pair(other)
            if is_float(a.dtype):
                return a._true_divide(b).trunc()
            q = a.floor_divide(b)  # integers: exact, where a float quotient would round
            return q + ((q < 0) & (q * b != a)).long()
        if rounding_mode is not None:
            raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got "
                             f"{rounding_mode!r}")
        return self._true_divide(other)

    def _true_divide(self, other, reflected: bool = False) -> Tensor:
        a, b = (t._floating() for t in self._pair(other))
        return apply(_op("div"), b, a) if reflected else apply(_op("div"), a, b)

    def floor_divide(self, other): return self._binary("floor_divide", other)
    def remainder(self, other): return self._binary("remainder", other)

    # ---- bitwise and logical (bool and integer tensors; not differentiable) ------------------
    def bitwise_not(self): return apply(_op("bitwise_not"), self)
    def bitwise_and(self, other): return self._binary("bitwise_and", other)
    def bitwise_or(self, other): return self._binary("bitwise_or", other)
    def bitwise_xor(self, other): return self._binary("bitwise_xor", other)

    def logical_not(self) -> Tensor:
        return self.eq(0)

    @numpy_aliases
    def any(self, dim=None, keepdim: bool = False) -> Tensor:
        return self.ne(0).sum(dim, keepdim) > 0

    @numpy_aliases
    def all(self, dim=None, keepdim: bool = False) -> Tensor:
        return self.eq(0).sum(dim, keepdim) == 0

    def matmul(self, other) -> Tensor:
        """torch.matmul: (..., M, K) @ (..., K, N) with batch dims broadcast; a 1-D operand is a
        vector (a row on the left, a column on the right) whose dim is removed from the result."""
        return _matmul(*self._pair(other))

    __add__ = add
    __sub__ = sub
    __mul__ = mul
    __truediv__ = _true_divide
    __floordiv__ = floor_divide
    __mod__ = remainder
    __invert__ = bitwise_not
    __and__ = bitwise_and
    __or__ = bitwise_or
    __xor__ = bitwise_xor
    __matmul__ = matmul

    def __radd__(self, other): return self._binary("add", other, reflected=True)
    def __rsub__(self, other): return self._subtract(other, reflected=True)
    def __rmul__(self, other): return self._binary("mul", other, reflected=True)
    def __rtruediv__(self, other):  # a number / self, as torch: self.reciprocal() * other
        if isinstance(other, (int, float, bool)):
            return self.reciprocal() * other
        return self._true_divide(other, reflected=True)
    def __rfloordiv__(self, other): return self._binary("floor_divide", other, reflected=True)
    def __rmod__(self, other): return self._binary("remainder", other, reflected=True)
    def __rand__(self, other): return self._binary("bitwise_and", other, reflected=True)
    def __ror__(self, other): return self._binary("bitwise_or", other, reflected=True)
    def __rxor__(self, other): return self._binary("bitwise_xor", other, reflected=True)
    def mm(self, other) -> Tensor:
        if self.ndim != 2 or getattr(other, "ndim", 2) != 2:
            raise RuntimeError(f"mm: both operands must be 2-D, got {self.shape} and "
                               f"{np.shape(getattr(other, 'data', other))}")
        return self.matmul(other)

    def bmm(self, other) -> Tensor:
        if self.ndim != 3 or getattr(other, "ndim", 3) != 3:
            raise RuntimeError(f"bmm: both operands must be 3-D, got {self.shape} and "
                               f"{np.shape(getattr(other, 'data', other))}")
        return self.matmul(other)

    def mv(self, other) -> Tensor:
        if self.ndim != 2 or getattr(other, "ndim", 1) != 1:
            raise RuntimeError(f"mv: expected a 2-D matrix and a 1-D vector, got {self.shape}")
        return self.matmul(other)

    def dot(self, other) -> Tensor:
        if self.ndim != 1 or getattr(other, "ndim", 1) != 1:
            raise RuntimeError(f"dot: both operands must be 1-D, got {self.shape}")
        return self.matmul(other)

    def __rmatmul__(self, other):
        a, b = self._pair(other)
        return _matmul(b, a)

    def pow(self, exponent) -> Tensor:
        """self ** exponent: a Python number (op `pow`) or a tensor broadcast against self (op
        `power`, differentiable in both)."""
        if isinstance(exponent, bool) and self.dtype == np.bool_:  # as torch: stays bool
            return self if exponent else self == self
        if isinstance(exponent, (int, float)):
            if is_float(self.dtype) or isinstance(exponent, float):
                return apply(_op("pow"), self._floating(), exponent=float(exponent))
            if exponent < 0:  # torch's rule: the result would not be an integer
                raise RuntimeError(f"pow: an integer tensor ({self.dtype}) to a negative "
                                   f"integer power ({exponent}); make the base float first")
            base = self.long() if self.dtype == np.bool_ else self  # as torch: int64
            return apply(_op("pow"), base, exponent=exponent)
        return self._binary("power", exponent)

    __pow__ = pow

    def __rpow__(self, base) -> Tensor:
        return self._binary("power", base, reflected=True)

    def __neg__(self) -> Tensor:
        return apply(_op("neg"), self)

    neg = __neg__

    # ---- in place: x += y, add_(y, alpha=...), zero_() ... (torch's semantics) ---------------
    def _update(self, name: str, fn, *args, keep_node: bool = False) -> Tensor:
        """self = fn(self, *args) in place, as torch: the new values are written into self's
        array, so its views and `.numpy()` see them, and a live graph that saved the array
        raises at backward (torch's version counter). While grad is enabled self takes the
        result's node; if that node saved self's old value, self takes the result's array
        instead (nothing else sees self's memory, `_shared` made sure), as torch keeps the
        original for it. keep_node: the old node stays a parent with zero gradient (fill_,
        copy_), as torch's. Refused in one line where minitorch cannot follow: a leaf that
        requires grad while grad is enabled (as torch), a result in a graph on memory other
        tensors share (torch rebases views' gradients, minitorch cannot), and a step being
        captured for replay (the tape sees ops, not writes)."""
        tracked = hooks.local.grad_enabled
        if hooks.local.tape is not None:
            raise RuntimeError(f"{name}: an in-place update cannot be captured for replay; "
                               "write x = x + y in the step function")
        if tracked and self.requires_grad and self._ctx is None:
            raise RuntimeError(f"{name}: a leaf tensor that requires grad cannot change in place "
                               "while grad is enabled (as torch): do it under minitorch.no_grad()")
        held = saved_holds(self.data)[0]
        out = fn(self, *args)
        if out.shape != self.shape:
            raise RuntimeError(f"{name}: the result's shape {out.shape} is not the tensor's "
                               f"{self.shape} (an in-place op cannot broadcast its target)")
        if not np.can_cast(out.dtype, self.dtype, "same_kind"):
            raise TypeError(f"{name}: a {out.dtype} result cannot be written into a "
                            f"{self.dtype} tensor (as torch): cast the tensor first")
        if tracked:
            if self.requires_grad and (keep_node or out._ctx is None):  # zero grad to the past
                out = where(Tensor(np.zeros(self.shape, bool)), self, out)
            out = out.to(self.dtype)  # the node's output dtype is self's (differentiable cast)
            if out._ctx is not None:
                if _shared(self):
                    raise RuntimeError(f"{name}: this tensor shares memory with another (a view "
                                       "of it, or it is one); minitorch cannot route their "
                                       "gradients through an in-place write: write x = x + y, "
                                       "or clone() first")
                if saved_holds(self.data)[0] > held:  # the new node saved the old value
                    self._data = out._data
                    self._take_node(out._ctx)
                    return self
        try:
            with inplace(self.data) as array:
                np.copyto(array, out.data, casting="same_kind")
        except ValueError as e:  # a read-only array: a broadcast view (expand), say
            raise RuntimeError(f"{name}: cannot write into this tensor in place: {e}") from None
        if tracked:
            self._take_node(out._ctx)
        return self

    def _take_node(self, ctx: Context | None) -> None:
        """After an in-place update: self is ctx's output now (a retained gradient moves with
        it, as torch's)."""
        if self._ctx is not None and self._ctx.retained is not None and ctx is not None:
            ctx.retained, self._ctx.retained = self._ctx.retained, None
        self._ctx, self.requires_grad = ctx, ctx is not None

    def add_(self, other, *, alpha=1):
        return self._update("add_", Tensor.add, _scaled(self, other, alpha))

    def sub_(self, other, *, alpha=1):
        return self._update("sub_", Tensor.sub, _scaled(self, other, alpha))

    def mul_(self, other): return self._update("mul_", Tensor.mul, other)
    def div_(self, other): return self._update("div_", Tensor._true_divide, other)
    def pow_(self, exponent): return self._update("pow_", Tensor.pow, exponent)
    def clamp_(self, min=None, max=None): return self._update("clamp_", Tensor.clamp, min, max)
    def exp_(self): return self._update("exp_", Tensor.exp)
    def log_(self): return self._update("log_", Tensor.log)
    def sqrt_(self): return self._update("sqrt_", Tensor.sqrt)
    def neg_(self): return self._update("neg_", Tensor.neg)
    def abs_(self): return self._update("abs_", Tensor.abs)
    def sigmoid_(self): return self._update("sigmoid_", Tensor.sigmoid)
    def tanh_(self): return self._update("tanh_", Tensor.tanh)
    def relu_(self): return self._update("relu_", Tensor.relu)

    def masked_fill_(self, mask, value):
        return self._update("masked_fill_", Tensor.masked_fill, mask, value)

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def fill_(self, value) -> Tensor:
        if isinstance(value, Tensor):  # a 0-d tensor: its gradient flows, as torch's
            if value.ndim:
                raise RuntimeError(f"fill_: the value must be a 0-d tensor, got shape "
                                   f"{value.shape}")
            return self.copy_(value)
        return self._update("fill_", lambda t: Tensor._make(np.full(t.shape, value, t.dtype), None),
                            keep_node=True)

    def copy_(self, src) -> Tensor:
        """self = src (broadcast to self's shape, cast to self's dtype; gradient flows to src)."""
        src = src if isinstance(src, Tensor) else Tensor(src)
        return self._update("copy_", lambda t: src.expand(*t.shape).to(t.dtype), keep_node=True)

    def __iadd__(self, other): return self._update("+=", Tensor.add, other)
    def __isub__(self, other): return self._update("-=", Tensor.sub, other)
    def __imul__(self, other): return self._update("*=", Tensor.mul, other)
    def __itruediv__(self, other): return self._update("/=", Tensor._true_divide, other)
    def __ifloordiv__(self, other): return self._update("//=", Tensor.floor_divide, other)
    def __imod__(self, other): return self._update("%=", Tensor.remainder, other)
    def __ipow__(self, other): return self._update("**=", Tensor.pow, other)
    def __iand__(self, other): return self._update("&=", Tensor.bitwise_and, other)
    def __ior__(self, other): return self._update("|=", Tensor.bitwise_or, other)
    def __ixor__(self, other): return self._update("^=", Tensor.bitwise_xor, other)

    # ---- comparisons (not differentiable) -------------------------------------------------
    def _compare(self, name: str, other: Any) -> Tensor:
        return apply(_op(name), *self._pair(other))

    def __lt__(self, other): return self._compare("less", other)
    def __le__(self, other): return self._compare("less_equal", other)
    def __gt__(self, other): return self._compare("greater", other)
    def __ge__(self, other): return self._compare("greater_equal", other)
    def eq(self, other): return self._compare("equal", other)
    def lt(self, other): return self._compare("less", other)
    def le(self, other): return self._compare("less_equal", other)
    def gt(self, other): return self._compare("greater", other)
    def ge(self, other): return self._compare("greater_equal", other)
    def ne(self, other): return self._compare("not_equal", other)

    def __eq__(self, other):  # as torch: elementwise, a bool tensor (`t in list` compares values)
        return NotImplemented if _foreign(other) else self.eq(other)

    def __ne__(self, other):
        return NotImplemented if _foreign(other) else self.ne(other)

    __hash__ = object.__hash__  # by identity, as torch: tensors stay usable as dict keys

    # ---- unary --------------------------------------------------------------------------
    def _floating(self) -> Tensor:
        """self, or an integer or bool tensor cast to the default dtype: what torch's floating
        ops (exp, sqrt, true division, ...) compute on, so int64 .exp() is float32 there too."""
        return self if is_float(self.dtype) else self.to(get_default_dtype())

    def exp(self): return apply(_op("exp"), self._floating())
    def log(self): return apply(_op("log"), self._floating())
    def sqrt(self): return apply(_op("sqrt"), self._floating())
    def tanh(self): return apply(_op("tanh"), self._floating())
    def sigmoid(self): return apply(_op("sigmoid"), self._floating())
    def relu(self): return apply(_op("relu"), self)
    def abs(self): return apply(_op("abs"), self)

    __abs__ = abs

    def gelu(self, approximate: str = "none") -> Tensor:
        """torch's GELU: exact (x * Phi(x), erf) by default, or approximate='tanh'."""
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        return apply(_op("gelu"), self, approximate=approximate)

    def sin(self): return apply(_op("sin"), self._floating())
    def log1p(self): return apply(_op("log1p"), self._floating())
    def expm1(self): return apply(_op("expm1"), self._floating())
    def log2(self): return apply(_op("log2"), self._floating())
    def log10(self): return apply(_op("log10"), self._floating())
    def sign(self): return apply(_op("sign"), self)
    def floor(self): return apply(_op("floor"), self)
    def ceil(self): return apply(_op("ceil"), self)
    def trunc(self): return apply(_op("trunc"), self)
    def isnan(self): return apply(_op("isnan"), self)
    def isinf(self): return apply(_op("isinf"), self)

    def round(self, *, decimals: int = 0) -> Tensor:
        """Half to even, as torch; only decimals=0."""
        if decimals != 0:
            raise NotImplementedError(f"round: only decimals=0 is supported, got {decimals}")
        return apply(_op("round"), self)

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None,
                   neginf: float | None = None) -> Tensor:
        """nan, +inf and -inf replaced (by default: 0 and the dtype's extreme finite values);
        the gradient is 0 at the replaced elements, as torch's."""
        return apply(_op("nan_to_num"), self, nan=nan, posinf=posinf, neginf=neginf)

    def lerp(self, end: Tensor, weight) -> Tensor:
        """self + weight * (end - self), broadcast; end has self's dtype (as torch), weight is a
        number or a tensor of self's dtype (a 0-d one of another dtype is cast)."""
        if not is_float(self.dtype) or not isinstance(end, Tensor) or end.dtype != self.dtype:
            raise TypeError(f"lerp: self ({self.dtype}) must be floating and end a tensor of the "
                            f"same dtype, got {getattr(end, 'dtype', type(end).__name__)}")
        if not isinstance(weight, Tensor):
            weight = Tensor._make(np.asarray(weight, dtype=self.dtype), None)
        elif weight.dtype != self.dtype:
            if weight.ndim:
                raise TypeError(f"lerp: weight must have self's dtype {self.dtype}, got "
                                f"{weight.dtype}")
            weight = weight.to(self.dtype)
        return apply(_op("lerp"), self, end, weight)
    def cos(self): return apply(_op("cos"), self._floating())

    def rsqrt(self) -> Tensor:
        return apply(_op("rsqrt"), self._floating())

    def square(self) -> Tensor:
        x = self.long() if self.dtype == np.bool_ else self  # torch: bool squares to int64
        return x * x

    def reciprocal(self) -> Tensor:
        return apply(_op("reciprocal"), self._floating())

    def clamp(self, min=None, max=None) -> Tensor:
        """torch.clamp: the gradient passes where min <= x <= max (bounds included)."""
        if min is None and max is None:
            raise ValueError("clamp: give min, max or both")
        if isinstance(min, Tensor) or isinstance(max, Tensor):  # bounds with gradients
            low = self if min is None else self.clamp_min(min)
            return low if max is None else low.clamp_max(max)
        if not is_float(self.dtype) and (isinstance(min, float) or isinstance(max, float)):
            return self._floating().clamp(min, max)  # as torch: int64 with a float bound is float
        if self.dtype == np.bool_:  # as torch: int64 with an integer bound, refused with a bool
            if isinstance(min, bool) or isinstance(max, bool):
                raise TypeError("clamp: not defined on a bool tensor with bool bounds (as torch)")
            return self.long().clamp(min, max)
        lo = self.data if min is None else np.maximum(self.data, min)
        bounded = lo if max is None else np.minimum(lo, max)
        inside = bounded == self.data  # false for nan: it stays nan with gradient 0, as torch
        fill = Tensor(bounded.astype(self.dtype, copy=False))
        return where(inside, self, fill)

    clip = clamp

    def clamp_min(self, min) -> Tensor:
        """max(self, min); a tensor bound broadcasts and gets the gradient where self < min
        (self where self >= min; neither at nan, which propagates), as torch."""
        if not isinstance(min, Tensor):
            return self.clamp(min=min)
        a, m = self._pair(min)
        return where(a >= m, a, where(a < m, m, (a + m).detach()))

    def clamp_max(self, max) -> Tensor:
        """min(self, max); a tensor bound as in clamp_min (self's gradient where self <= max)."""
        if not isinstance(max, Tensor):
            return self.clamp(max=max)
        a, m = self._pair(max)
        return where(a <= m, a, where(a > m, m, (a + m).detach()))

    def maximum(self, other) -> Tensor:
        """torch.maximum: elementwise; at a tie each side gets half of the gradient."""
        a, b = self._pair(other)
        if not is_float(a.dtype):  # no gradient, so no tie to share (and no float halves)
            return where(a < b, b, a)
        return where(a > b, a, where(a < b, b, (a + b) * 0.5))

    def minimum(self, other) -> Tensor:
        """torch.minimum: elementwise; at a tie each side gets half of the gradient."""
        a, b = self._pair(other)
        if not is_float(a.dtype):
            return where(a > b, b, a)
        return where(a < b, a, where(a > b, b, (a + b) * 0.5))

    # ---- reductions (torch names: dim, keepdim) ---------------------------------------
    @numpy_aliases
    def sum(self, dim=None, keepdim: bool = False) -> Tensor:
        return apply(_op("sum"), self, axis=_axis(dim), keepdims=keepdim)

    @numpy_aliases
    def mean(self, dim=None, keepdim: bool = False) -> Tensor:
        return apply(_op("mean"), self, axis=_axis(dim), keepdims=keepdim)

    @numpy_aliases
    def var(self, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
        """sum((x - mean)^2) / (N - correction) over `dim` (default all), with torch's overloads:
        the second positional argument is `unbiased` (correction 1 or 0), var(True) is
        var(unbiased=True), and correction= is keyword-only."""
        dim, correction = _correction("var", dim, unbiased, correction)
        return apply(_op("var"), self, axis=_axis(dim), keepdims=keepdim, ddof=correction)

    @numpy_aliases
    def amax(self, dim=None, keepdim: bool = False) -> Tensor:
        return apply(_op("max"), self, axis=_axis(dim), keepdims=keepdim)

    @numpy_aliases
    def prod(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """Product over all elements or along one dim (int64 for integers and bools, as torch);
        the gradient is exact where elements are 0."""
        if dim is None and keepdim:
            raise TypeError("prod: keepdim needs a dim (as torch)")
        return apply(_op("prod"), self, axis=dim, keepdims=keepdim)

    @numpy_aliases
    def cumsum(self, dim: int) -> Tensor:
        return apply(_op("cumsum"), self, axis=dim)

    def argsort(self, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
        """Indices that sort along dim; always stable (ties keep their order), nan the largest."""
        return apply(_op("argsort"), self, axis=dim, descending=descending)

    def sort(self, dim: int = -1, descending: bool = False, *, stable: bool = False):
        """(values, indices) sorted along dim, stably; values are gathered at indices, so the
        gradient goes back to the positions they came from."""
        indices = self.argsort(dim, descending)
        if self.ndim == 0:
            return SortResult(self.clone(), indices)
        return SortResult(self.gather(dim, indices), indices)

    @numpy_aliases
    def max(self, dim=None, keepdim: bool = False):
        """Like torch: the maximum over all elements (ties share the gradient), or (values,
        indices) along `dim`, where values are taken at indices (the first maximum), so the
        whole gradient goes there. x.max(other) with a Tensor is maximum, as torch's."""
        if isinstance(dim, Tensor):
            return self.maximum(dim)
        if dim is None:
            return apply(_op("max"), self, axis=None, keepdims=False, select=True)
        indices = self.argmax(dim, keepdim=True)
        if self.ndim == 0:
            return MaxResult(self.clone(), indices)
        d = dim % self.ndim
        index = list(np.ix_(*(np.arange(n) for n in indices.shape)))  # open grids, keepdim shape
        index[d] = indices.data
        values = apply(_op("getitem"), self, index=tuple(index))
        if not keepdim:
            values, indices = values.squeeze(d), indices.squeeze(d)
        return MaxResult(values, indices)

    def gather(self, dim: int, index: Any) -> Tensor:
        """torch.gather: out[i][j][k] = self[i][index[i][j][k]][k] for dim = 1 (index has self's
        number of dims); the gradient scatter-adds back to the gathered positions."""
        index = np.asarray(index.data if isinstance(index, Tensor) else index)
        if index.ndim != self.ndim or index.dtype.kind not in "iu":
            raise RuntimeError(f"gather: index must be an integer tensor with {self.ndim} dims "
                               f"(as the input), got shape {index.shape} dtype {index.dtype}")
        _check_in_range("gather", index, self.shape[dim] if self.ndim else 1, dim)
        if self.ndim == 0:
            return apply(_op("getitem"), self, index=())
        parts = list(np.ix_(*(np.arange(n) for n in index.shape)))  # open grids, index's shape
        parts[dim % self.ndim] = index
        return apply(_op("getitem"), self, index=tuple(parts))

    @numpy_aliases
    def argmax(self, dim=None, keepdim: bool = False) -> Tensor:
        return apply(_op("argmax"), self, axis=dim, keepdims=keepdim)

    def _flipped(self) -> Tensor:
        """The order reversed exactly: -x for floats, ~x = -x - 1 for integers (no overflow at
        the most negative one) and not x for bools. min is max of this, flipped back."""
        return -self if is_float(self.dtype) else ~self

    @numpy_aliases
    def amin(self, dim=None, keepdim: bool = False) -> Tensor:
        return self._flipped().amax(dim, keepdim)._flipped()

    @numpy_aliases
    def min(self, dim=None, keepdim: bool = False):
        """torch.min: over all elements, or (values, indices) along `dim` (as max); with a
        Tensor, minimum."""
        if isinstance(dim, Tensor):
            return self.minimum(dim)
        if dim is None:
            return self._flipped().max()._flipped()
        values, indices = self._flipped().max(dim, keepdim)
        return MaxResult(values._flipped(), indices)

    @numpy_aliases
    def argmin(self, dim=None, keepdim: bool = False) -> Tensor:
        return self._flipped().argmax(dim, keepdim)

    @numpy_aliases
    def std(self, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
        """sqrt of var, with var's arguments."""
        dim, correction = _correction("std", dim, unbiased, correction)
        return self.var(dim, keepdim=keepdim, correction=correction).sqrt()

    @numpy_aliases
    def logsumexp(self, dim, keepdim: bool = False) -> Tensor:
        """log(sum(exp(x), dim)), shifted by the (constant) maximum so it cannot overflow; the
        gradient is softmax(x, dim)."""
        x = self._floating()
        shift = x.detach().amax(dim, keepdim=True)
        shift = where(shift.isfinite(), shift, 0.0)  # all -inf or inf rows: no shift
        out = (x - shift).exp().sum(dim, keepdim=True).log() + shift
        return out if keepdim else out.sum(dim)  # summing the size-1 dims drops them

    def isfinite(self) -> Tensor:
        return apply(_op("isfinite"), self)

    @numpy_aliases
    def softmax(self, dim: int = -1) -> Tensor:
        return apply(_op("softmax"), self, axis=dim)

    @numpy_aliases
    def log_softmax(self, dim: int = -1) -> Tensor:
        return apply(_op("log_softmax"), self, axis=dim)

    # ---- shape --------------------------------------------------------------------------
    def reshape(self, *shape) -> Tensor:
        return apply(_op("reshape"), self, shape=as_shape(shape))

    view = reshape

    def permute(self, *dims) -> Tensor:
        return apply(_op("permute"), self, axes=as_shape(dims))

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        """torch semantics: swap two dimensions (a 0-d tensor accepts 0 and -1: no change)."""
        if self.ndim == 0:
            if {dim0, dim1} <= {0, -1}:
                return apply(_op("permute"), self, axes=())
            raise IndexError(f"transpose: dims ({dim0}, {dim1}) are out of range for a 0-d tensor")
        axes = list(range(self.ndim))
        axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
        return apply(_op("permute"), self, axes=tuple(axes))

    swapaxes = transpose

    @property
    def T(self) -> Tensor:
        return apply(_op("permute"), self, axes=tuple(reversed(range(self.ndim))))

    @property
    def mT(self) -> Tensor:
        return self.transpose(-2, -1)

    def t(self) -> Tensor:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, got {self.ndim}-D")
        return self.T

    def view_as(self, other: Tensor) -> Tensor:
        return self.view(other.shape)

    @numpy_aliases
    def unsqueeze(self, dim: int) -> Tensor:
        dim = dim if dim >= 0 else dim + self.ndim + 1
        return self.reshape(self.shape[:dim] + (1,) + self.shape[dim:])

    @numpy_aliases
    def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
        """Remove size-1 dims: all of them, or those of `dim` (an int or a tuple) that have
        size 1 (torch semantics)."""
        if dim is None:
            return self.reshape(tuple(n for n in self.shape if n != 1))
        given = [_dim(d, self.ndim, "squeeze") for d in (dim if isinstance(dim, Sequence) else
                                                           (dim,))]
        dims = set(given)
        if len(dims) < len(given):
            raise RuntimeError(f"squeeze: a dim appears more than once in {dim} (as torch)")
        if self.ndim == 0:
            return self
        return self.reshape(tuple(n for i, n in enumerate(self.shape)
                                  if not (i in dims and n == 1)))

    def expand(self, *sizes) -> Tensor:
        """torch.Tensor.expand: broadcast size-1 dims (and new leading dims) to `sizes`; -1 keeps
        a dim's size. The gradient sums over the expanded dims."""
        sizes = as_shape(sizes)
        lead = len(sizes) - self.ndim
        if lead < 0:
            raise RuntimeError(f"expand: the number of sizes ({len(sizes)}) must be at least the "
                               f"tensor's dimension ({self.ndim})")
        shape = []
        for i, n in enumerate(sizes):
            if n == -1:
                if i < lead:
                    raise RuntimeError(f"expand: -1 is not allowed for a new leading dim {i}")
                n = self.shape[i - lead]
            shape.append(int(n))
        return apply(_op("broadcast_to"), self, shape=tuple(shape))

    def expand_as(self, other: Tensor) -> Tensor:
        return self.expand(other.shape)

    def clone(self) -> Tensor:
        """A copy that stays in the graph (gradient flows through unchanged)."""
        return apply(_op("copy"), self)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """torch.flatten: dims start_dim..end_dim merged into one (a 0-d tensor becomes (1,))."""
        if self.ndim == 0:
            return self.reshape(1)
        start, end = start_dim % self.ndim, end_dim % self.ndim
        if start > end:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        return self.reshape(self.shape[:start] + (-1,) + self.shape[end + 1:])

    def contiguous(self) -> Tensor:
        return self  # NumPy arrays of any layout serve every op

    def repeat(self, *sizes) -> Tensor:
        """torch's repeat (NumPy's tile): the tensor tiled sizes[i] times along dim i, with new
        leading dims when more sizes than dims are given; the gradient sums over the tiles."""
        sizes = as_shape(sizes)
        if not sizes or len(sizes) < self.ndim or any(int(n) < 0 for n in sizes):
            raise RuntimeError(f"repeat: sizes {tuple(sizes)} must be non-negative and at least "
                               f"as many as the tensor's dims ({self.ndim})")
        shape = (1,) * (len(sizes) - self.ndim) + self.shape
        pairs = [(int(r), n) for r, n in zip(sizes, shape)]
        x = self.reshape(tuple(d for _, n in pairs for d in (1, n)))  # (1, n0, 1, n1, ...)
        x = apply(_op("broadcast_to"), x, shape=tuple(d for p in pairs for d in p))
        return x.reshape(tuple(r * n for r, n in pairs))

    def narrow(self, dim: int, start, length: int) -> Tensor:
        """The slice start:start+length along dim (start may be negative), as torch."""
        if self.ndim == 0:
            raise RuntimeError("narrow() cannot be applied to a 0-dim tensor")
        d, start = _dim(dim, self.ndim, "narrow"), int(start)
        n = self.shape[d]
        if not -n <= start <= n:
            raise IndexError(f"narrow: start {start} is out of range [{-n}, {n}] for dim {dim}")
        start = start + n if start < 0 else start
        if length < 0 or start + length > n:
            raise RuntimeError(f"narrow: start ({start}) + length ({length}) must be within "
                               f"dim {dim}'s size {n}, length non-negative")
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def select(self, dim: int, index: int) -> Tensor:
        """self indexed by `index` along dim, which is removed."""
        if self.ndim == 0:
            raise IndexError("select() cannot be applied to a 0-dim tensor")
        d, index = _dim(dim, self.ndim, "select"), int(index)
        if not -self.shape[d] <= index < self.shape[d]:
            raise IndexError(f"select(): index {index} out of range for tensor of size "
                             f"{self.shape} at dimension {dim}")
        return apply(_op("getitem"), self, index=(slice(None),) * d + (index,))

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        if self.ndim == 0:
            raise IndexError("unbind: dimension specified as 0 but tensor has no dimensions")
        return tuple(self.select(dim, i) for i in range(self.shape[_dim(dim, self.ndim, "unbind")]))

    def index_select(self, dim: int, index: Tensor) -> Tensor:
        """The entries at `index` (a 1-D or 0-D integer tensor; repeats allowed) along dim; the
        gradient scatter-adds back (repeated indices accumulate)."""
        idx = index.data if isinstance(index, Tensor) else None
        if idx is None or idx.dtype.kind not in "iu" or idx.ndim > 1:
            raise TypeError(f"index_select: index must be a 1-D integer tensor, got "
                            f"{getattr(idx, 'shape', type(index).__name__)} "
                            f"{getattr(idx, 'dtype', '')}".rstrip())
        d = _dim(dim, self.ndim, "index_select")
        _check_in_range("index_select", idx, self.shape[d] if self.ndim else 1, dim)
        if self.ndim == 0:
            return apply(_op("getitem"), self, index=())
        return apply(_op("getitem"), self, index=(slice(None),) * d + (idx.reshape(-1),))

    def flip(self, dims) -> Tensor:
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        index = [slice(None)] * self.ndim
        for d in dims:
            index[d] = slice(None, None, -1)
        return self[tuple(index)]

    def split(self, split_size, dim: int = 0) -> tuple[Tensor, ...]:
        """torch.split: pieces of split_size along dim (the last may be shorter), or of the
        sizes listed."""
        n = self.shape[dim]
        if isinstance(split_size, int):
            if split_size <= 0:
                raise ValueError(f"split: split_size must be > 0, got {split_size}")
            sizes = [min(split_size, n - i) for i in range(0, n, split_size)] or [0]
        else:
            sizes = list(split_size)
            if sum(sizes) != n:
                raise ValueError(f"split: sizes {sizes} do not add up to dim {dim}'s {n}")
        out, start = [], 0
        for k in sizes:
            index = [slice(None)] * self.ndim
            index[dim] = slice(start, start + k)
            out.append(self[tuple(index)])
            start += k
        return tuple(out)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        """torch.chunk: at most `chunks` pieces of ceil(n / chunks) along dim."""
        if chunks <= 0:
            raise ValueError(f"chunk: chunks must be > 0, got {chunks}")
        n = self.shape[dim]
        return self.split(max(-(-n // chunks), 1), dim)

    def __getitem__(self, index: Any) -> Tensor:
        """torch indexing: integers select first, then the advanced (array) indices apply as in
        NumPy to what is left, so `t[0, :, [0, 1]]` has shape (3, 2) on a (2, 3, 4) tensor."""
        out = self
        for stage in _torch_index(index, self.ndim):
            out = apply(_op("getitem"), out, index=stage)
        return out

    def __setitem__(self, index: Any, value: Any) -> None:
        """torch's x[index] = value, in place (as x += y): a leaf that requires grad is refused
        while grad is enabled; where a gradient is needed the write joins the graph (op
        index_put), else it goes straight into x's array."""
        value = value if isinstance(value, Tensor) else Tensor(np.asarray(value, self.dtype))
        stages = tuple(_torch_index(index, self.ndim))
        if hooks.local.tape is not None or hooks.local.grad_enabled and (
                self.requires_grad or value.requires_grad):
            self._update("setitem", lambda t: apply(_op("index_put"), t, value, stages=stages))
        else:
            try:
                with inplace(self.data) as array:
                    for stage in stages[:-1]:
                        array = array[stage]  # basic: a view
                    array[stages[-1]] = value.data
            except (IndexError, ValueError) as e:  # out of range, shapes, a read-only x
                raise _retold(e, f"setitem on a tensor of shape {self.shape}: {e}") from None

    def masked_fill(self, mask: Any, value: float) -> Tensor:
        mask = mask if isinstance(mask, Tensor) else Tensor(np.asarray(mask))
        return apply(_op("masked_fill"), self, mask, value=float(value))

    def where(self, condition: Any, other: Any) -> Tensor:
        """torch's Tensor.where: self where condition else other."""
        return where(condition, self, other)


# NumPy ufunc name -> the Tensor method that runs `array <op> tensor` (the reflected operator)
_REFLECTED = {"add": "__radd__", "subtract": "__rsub__", "multiply": "__rmul__",
              "divide": "__rtruediv__", "floor_divide": "__rfloordiv__",
              "remainder": "__rmod__", "power": "__rpow__", "matmul": "__rmatmul__",
              "bitwise_and": "__rand__", "bitwise_or": "__ror__", "bitwise_xor": "__rxor__",
              "less": "__gt__", "less_equal": "__ge__", "greater": "__lt__",
              "greater_equal": "__le__", "equal": "__eq__", "not_equal": "__ne__"}


def _foreign(other: Any) -> bool:
    """Not a tensor, array or number: == gives Python's answer (t == None is False), as torch."""
    return not isinstance(other, (Tensor, np.ndarray, np.generic, int, float, bool, list, tuple))


def _shared(t: Tensor) -> bool:
    """Whether t's memory is reachable other than through t: its array is a view, or a view,
    an alias (`.numpy()`) or another tensor holds it. The holds of live graph nodes that saved
    it are not counted: the version counter covers those. Conservative where reference counts
    cannot be trusted (graph._TRUSTED)."""
    a = t.data
    if a.base is not None or not graph._TRUSTED:
        return True
    # t's slot, `a` and the call's argument, and per node that saved `a` itself its saved tuple
    # and lock entry; a saved view of `a` is not excused: its .base counts as a holder
    return sys.getrefcount(a) > 3 + 2 * saved_holds(a)[0]


def _check_in_range(name: str, index: np.ndarray, n: int, dim) -> None:
    """RuntimeError naming the first index outside [0, n), the size of dim (gather,
    index_select: NumPy would wrap a negative one)."""
    bad = index[(index < 0) | (index >= n)]
    if bad.size:
        raise RuntimeError(f"{name}: index {int(bad.flat[0])} is out of bounds for dim {dim} "
                           f"of size {n}")


def _correction(name: str, dim, unbiased, correction) -> tuple[Any, int]:
    """torch's var/std overloads -> (dim, correction): (dim, unbiased) or (dim, *, correction);
    a bool first argument is `unbiased`."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim if unbiased is None else unbiased
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}: give unbiased or correction, not both (as torch)")
    if correction is None:
        correction = 1 if unbiased is None else int(unbiased)
    return dim, correction


def _scaled(t: Tensor, other: Any, alpha) -> Any:
    """alpha*other, for torch's t.add/sub(other, alpha=...); as torch, a float alpha is refused
    for an integer result and a bool alpha for a non-bool one."""
    floating = is_float(t.dtype) or isinstance(other, float) or (
        isinstance(other, Tensor) and is_float(other.dtype))
    if isinstance(alpha, bool) and (floating or t.dtype != np.bool_):
        raise RuntimeError(f"alpha={alpha}: a bool alpha needs bool tensors (as torch)")
    if isinstance(alpha, float) and not floating:
        raise RuntimeError(f"alpha={alpha}: integer tensors take an integer alpha (as torch)")
    return other if alpha == 1 else other * alpha


def _dim(dim: int, ndim: int, name: str) -> int:
    """dim as a non-negative axis of an ndim tensor (0-d takes 0 and -1), or IndexError."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{name}: dim {dim} is out of range for a tensor of {ndim} dims "
                         f"(expected [{-n}, {n - 1}])")
    return dim % n


def _axis(dim):
    if dim is None or isinstance(dim, int):
        return dim
    return tuple(dim)


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"matmul: both arguments need at least 1 dimension, got shapes "
                           f"{a.shape} and {b.shape}")
    if a.ndim >= 2 and b.ndim >= 2:
        return apply(_op("matmul"), a, b)
    y = apply(_op("matmul"), a.reshape((1,) + a.shape) if a.ndim == 1 else a,
              b.reshape(b.shape + (1,)) if b.ndim == 1 else b)
    if b.ndim == 1:
        y = y.squeeze(-1)  # (..., M)
    if a.ndim == 1:
        y = y.squeeze(-1 if b.ndim == 1 else -2)  # the row vector's dim
    return y


def _index_part(p: Any) -> Any:
    """One part of an index as the getitem op takes it: Tensors and lists become ndarrays, and a
    0-d integer array becomes a Python int (torch treats it as an integer)."""
    if isinstance(p, Tensor):
        p = p.data
    elif isinstance(p, list):
        p = np.asarray(p)
    if isinstance(p, np.ndarray) and p.ndim == 0 and p.dtype.kind in "iu":
        return int(p)
    return p


def _is_int(p: Any) -> bool:
    return isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_))


def _torch_index(index: Any, ndim: int) -> list[tuple]:
    """torch's indexing as one or two NumPy indices applied in turn. torch applies integers as
    selections first; NumPy treats an integer beside an index array as one more advanced index
    (and, separated from it by a slice, moves the result's dims to the front). So with both
    present: stage 1 applies the ints, slices, None and Ellipsis, every index array replaced by
    full slices; stage 2 applies the index arrays to what is left."""
    parts = [_index_part(p) for p in (index if isinstance(index, tuple) else (index,))]
    used = 0  # dims of self the index consumes
    for p in parts:
        if isinstance(p, np.ndarray):
            used += p.ndim if p.dtype.kind == "b" else 1
        elif p is not None and p is not Ellipsis and not isinstance(p, (bool, np.bool_)):
            used += 1
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim} ({used} indexed)")
    has_array = any(isinstance(p, np.ndarray) for p in parts)
    if not (has_array and any(_is_int(p) for p in parts)):
        return [tuple(parts)]  # NumPy and torch agree
    first: list = []
    second: list = []
    for p in parts:
        if p is Ellipsis:
            first.append(p)
            second.extend([slice(None)] * (ndim - used))
        elif _is_int(p):
            first.append(p)
        elif isinstance(p, np.ndarray):
            first.extend([slice(None)] * (p.ndim if p.dtype.kind == "b" else 1))
            second.append(p)
        else:  # a slice, None or a Python bool (both add a dim)
            first.append(p)
            second.append(slice(None))
    return [tuple(first), tuple(second)]


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


def as_shape(shape: Sequence) -> tuple[int, ...]:
    """Sizes given as f(2, 3) or f((2, 3)) -> (2, 3)."""
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


def where(condition: Any, x: Any, y: Any) -> Tensor:
    """x where condition else y (torch.where); x or y may be Python numbers."""
    cond = condition if isinstance(condition, Tensor) else Tensor(np.asarray(condition))
    if not isinstance(x, Tensor):
        x = Tensor(np.asarray(x, dtype=getattr(y, "dtype", None)))
    x, y = x._pair(y)
    return apply(REGISTRY["where"], cond, x, y)
