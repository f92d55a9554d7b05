"""Making tensors: the seedable Generator and the factories (tensor, zeros, ones, full, randn,
rand, randint, arange, linspace, eye, the *_like ones, as_tensor, randperm, multinomial)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from . import runtime
from .dtypes import get_default_dtype, is_float, parse_to
from .tensor import MaxResult, Tensor, apply, as_shape, where  # noqa: F401  (where: public here)


def _cpu(fn: str, device: Any) -> None:
    """Accept device=None or 'cpu' (minitorch runs on the CPU); refuse any other in one line."""
    if device is not None and str(device).split(":")[0] != "cpu":
        raise RuntimeError(f"{fn}: minitorch runs on the CPU only, got device {device!r}")


class Generator:
    """A seedable random source (wraps np.random.Generator), torch.Generator's API:
    Generator(device='cpu'), manual_seed(n) -> self, initial_seed(), seed(), get_state()/
    set_state(). Generator(n) with an int is minitorch's shorthand for
    Generator().manual_seed(n). The stream is NumPy's PCG64, not torch's Mersenne Twister."""

    def __init__(self, device: Any = "cpu"):
        seed = 0
        if isinstance(device, numbers.Integral) and not isinstance(device, bool):
            device, seed = "cpu", int(device)
        _cpu("Generator", device)
        self.device = "cpu"
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> Generator:
        if not isinstance(seed, numbers.Integral) or isinstance(seed, bool):
            raise TypeError(f"manual_seed expected an int, got {type(seed).__name__}")
        self._seed = int(seed)
        self.rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self) -> int:
        return self._seed

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed (torch's seed())."""
        self.manual_seed(int(np.random.SeedSequence().entropy) % 2**63)
        return self._seed

    def get_state(self) -> dict:
        return self.rng.bit_generator.state

    def set_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Seed the default generator used by randn and the nn initializers."""
    return default_generator.manual_seed(seed)


def tensor(data: Any, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """A tensor holding a copy of data, as torch.tensor (from_numpy shares instead). While a
    step is captured for replay it shares an array instead, so the tape can follow fn's input
    (in-place writes, which the copy guards against, are refused there)."""
    _cpu("tensor", device)
    data = _values(data)
    if not isinstance(data, (list, tuple, int, float, bool)) and runtime.local.tape is None:
        data = np.array(data, copy=True)  # arrays and buffers; Python data makes a new one
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def _values(data: Any) -> Any:
    """data with every Tensor in it (nested in lists or tuples too) replaced by its values, as
    torch.tensor([loss1, loss2]) takes them (without their graphs)."""
    if isinstance(data, Tensor):
        return data.data
    if isinstance(data, (list, tuple)):
        return [_values(d) for d in data]
    return data


def zeros(*shape, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    _cpu("zeros", device)
    return Tensor(np.zeros(as_shape(shape), dtype=dtype or get_default_dtype()), requires_grad)


def ones(*shape, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    _cpu("ones", device)
    return Tensor(np.ones(as_shape(shape), dtype=dtype or get_default_dtype()), requires_grad)


def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    return full_like(input, 0, dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    return full_like(input, 1, dtype=dtype, device=device, requires_grad=requires_grad)


def randn(*shape, dtype: Any = None, generator: Generator | None = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    _cpu("randn", device)
    rng = (generator or default_generator).rng
    data = rng.standard_normal(as_shape(shape)).astype(dtype or get_default_dtype())
    return Tensor(data, requires_grad)


def full(size, fill_value, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """torch.full: a tensor of shape `size` filled with fill_value.

    Args:
        size: the shape, a sequence of ints (an int for 1-D).
        fill_value: the value; without dtype, a bool gives bool, an integer int64, a float the
            default float dtype (as torch).
    Returns:
        A Tensor of shape `size`.
    """
    _cpu("full", device)
    if dtype is None:
        dtype = (np.bool_ if isinstance(fill_value, (bool, np.bool_)) else
                 np.int64 if isinstance(fill_value, numbers.Integral) else get_default_dtype())
    return Tensor(np.full(as_shape((size,) if np.ndim(size) == 0 else size), fill_value, dtype),
                  requires_grad)


def empty(*shape, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.empty; here filled with zeros (never uninitialized memory)."""
    return zeros(*shape, dtype=dtype, device=device, requires_grad=requires_grad)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing `array`'s memory, as torch.from_numpy (writes show on both sides)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected an np.ndarray, got {type(array).__name__}")
    if array.dtype not in (np.float32, np.float64, np.int64, np.bool_):
        raise TypeError(f"from_numpy: dtype {array.dtype} is not one of float32, float64, "
                        "int64, bool")
    return Tensor._make(array, None)


def rand(*shape, dtype: Any = None, generator: Generator | None = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """Draws uniform on [0, 1) from `generator` (default: minitorch's default_generator).

    Args:
        *shape: the shape, as ints or one sequence.
        dtype: float32 or float64 (default: the default dtype).
    Returns:
        A Tensor of that shape.
    """
    _cpu("rand", device)
    rng = (generator or default_generator).rng
    return Tensor(rng.random(as_shape(shape)).astype(dtype or get_default_dtype()),
                  requires_grad)


def randint(low: int, high=None, size=(), generator: Generator | None = None,
            dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Integers drawn uniform on [low, high); randint(high, size) as torch's.

    Args:
        low, high: the bounds (high excluded).
        size: the shape (a sequence of ints).
    Returns:
        An int64 Tensor (or `dtype`) of shape `size`.
    """
    _cpu("randint", device)
    if high is None or isinstance(high, (tuple, list)):  # randint(high) or randint(high, size)
        low, high, size = 0, low, size if high is None else high
    rng = (generator or default_generator).rng
    return Tensor(rng.integers(low, high, as_shape(size)).astype(dtype or np.int64),
                  requires_grad)


def arange(start, end=None, step=1, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """torch.arange: int64 for integer arguments, else the default float dtype."""
    _cpu("arange", device)
    if end is None:
        start, end = 0, start
    if dtype is None and not all(_is_integer(a) for a in (start, end, step)):
        dtype = get_default_dtype()
    start, end, step = (a.item() if isinstance(a, Tensor) else a for a in (start, end, step))
    dtype = np.dtype(dtype or np.int64)
    if dtype.kind in "iub":  # torch casts the bounds to the integer dtype first: 3.1 -> 3
        start, end, step = (int(a) for a in (start, end, step))
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:  # NumPy would return an empty tensor
        raise RuntimeError(f"arange: upper bound {end} and lower bound {start} are "
                           f"inconsistent with step sign ({step}), as torch")
    return Tensor(np.arange(start, end, step, dtype=dtype), requires_grad)


def _is_integer(a) -> bool:
    """An integer number: Python's, NumPy's or a one-element integer tensor (torch's rule)."""
    if isinstance(a, Tensor):
        return a.dtype.kind in "iu"
    return isinstance(a, numbers.Integral) and not isinstance(a, (bool, np.bool_))


def multinomial(input: Tensor, num_samples: int, replacement: bool = False,
                generator: Generator | None = None) -> Tensor:
    """Indices drawn with probability proportional to each row of weights (from `generator`,
    default minitorch's default_generator); without replacement an index is drawn at most
    once per row, as torch.

    Args:
        input: (n,) or (rows, n) finite non-negative weights, each row with a positive sum.
        num_samples: draws per row (at most n without replacement).
    Returns:
        int64 indices of shape (num_samples,) or (rows, num_samples).
    """
    if not is_float(input.dtype):
        raise RuntimeError(f"multinomial: only floating-point weights are supported (as "
                           f"torch), got {input.dtype}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral) or \
            num_samples <= 0:
        raise RuntimeError(f"multinomial: num_samples must be a positive integer, got "
                           f"{num_samples!r}")
    p = np.asarray(input.data, dtype=np.float64)
    if p.ndim not in (1, 2) or (p < 0).any() or not np.isfinite(p).all():
        raise RuntimeError(f"multinomial: expected a 1-D or 2-D tensor of finite non-negative "
                           f"weights, got shape {input.shape}")
    rows = p.reshape(-1, p.shape[-1])
    if (rows.sum(-1) <= 0).any():
        raise RuntimeError("multinomial: a row of weights sums to 0")
    if not replacement and num_samples > rows.shape[-1]:
        raise RuntimeError(f"multinomial: cannot draw {num_samples} samples without "
                           f"replacement from {rows.shape[-1]} categories")
    rng = (generator or default_generator).rng
    out = np.stack([rng.choice(len(r), num_samples, replace=replacement, p=r / r.sum())
                    for r in rows]).astype(np.int64)
    return Tensor(out.reshape(*p.shape[:-1], num_samples))


def full_like(input: Tensor, fill_value, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """torch.full_like: input's shape filled with fill_value, in input's dtype (or `dtype`)."""
    _cpu("full_like", device)
    return Tensor(np.full(input.shape, fill_value, dtype or input.dtype), requires_grad)


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """torch.empty_like; here filled with zeros (never uninitialized memory)."""
    return full_like(input, 0, dtype=dtype, device=device, requires_grad=requires_grad)


def _float_like(fn: str, input: Tensor, dtype: Any, device: Any) -> Any:
    """The dtype of rand_like/randn_like's result, which must be floating (as torch)."""
    _cpu(fn, device)
    dtype = np.dtype(dtype or input.dtype)
    if not is_float(dtype):
        raise NotImplementedError(f"{fn}: needs a floating dtype, got {dtype}")
    return dtype


def rand_like(input: Tensor, *, generator: Generator | None = None, dtype: Any = None,
              device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.rand_like: uniform on [0, 1) in input's shape, from minitorch's generator."""
    dtype = _float_like("rand_like", input, dtype, device)
    return rand(input.shape, dtype=dtype, generator=generator, requires_grad=requires_grad)


def randn_like(input: Tensor, *, generator: Generator | None = None, dtype: Any = None,
               device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.randn_like: standard normal in input's shape, from minitorch's generator."""
    dtype = _float_like("randn_like", input, dtype, device)
    return randn(input.shape, dtype=dtype, generator=generator, requires_grad=requires_grad)


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *,
                 generator: Generator | None = None, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> Tensor:
    """torch.randint_like(input, high) or (input, low, high): integers on [low, high) in
    input's shape and dtype (or `dtype`; a float tensor gets whole-number floats, as torch)."""
    _cpu("randint_like", device)
    if high is None:
        low, high = 0, low
    if low >= high:
        raise RuntimeError(f"randint_like: low ({low}) must be less than high ({high})")
    out = randint(low, high, input.shape, generator=generator, dtype=dtype or input.dtype)
    return out.requires_grad_(True) if requires_grad else out


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = np.int64,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.randperm: a random permutation of 0..n-1, from minitorch's generator.

    Returns:
        A Tensor of shape (n,), int64 unless `dtype`.
    """
    _cpu("randperm", device)
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    rng = (generator or default_generator).rng
    return Tensor(rng.permutation(n).astype(dtype), requires_grad)


def linspace(start, end, steps: int, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """torch.linspace: `steps` points from start to end, both included. As torch, the first
    half counts up from start and the second half down from end, in the result's dtype (an
    integer dtype truncates start and end, computes in float64, then truncates). torch's
    vectorized kernel may differ from this in the last bit of a float.

    Returns:
        A Tensor of shape (steps,), the default float dtype unless `dtype`.
    """
    _cpu("linspace", device)
    if not _is_integer(steps):
        raise TypeError(f"linspace: steps must be an int, got {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    dtype = np.dtype(dtype or get_default_dtype())
    if not (is_float(dtype) or dtype == np.int64):
        raise NotImplementedError(f"linspace: not implemented for dtype {dtype}")
    if any(isinstance(a, Tensor) and a.ndim for a in (start, end)):
        raise RuntimeError("linspace: start and end must be numbers or 0-d tensors")
    work = dtype if is_float(dtype) else np.dtype(np.float64)
    start, end = (work.type(dtype.type(a.item() if isinstance(a, Tensor) else a))
                  for a in (start, end))  # an integer dtype truncates start and end first
    i = np.arange(steps)
    step = (end - start) / work.type(max(steps - 1, 1))
    up = (i < steps // 2) | (steps == 1)  # a single point is start
    out = np.where(up, start + step * i.astype(work), end - step * (steps - 1 - i).astype(work))
    return Tensor(out.astype(dtype), requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    """torch.eye: an (n, m) tensor (m defaults to n) with ones on the diagonal."""
    _cpu("eye", device)
    m = n if m is None else m
    if not (_is_integer(n) and _is_integer(m)):
        raise TypeError(f"eye: n and m must be ints, got {type(n).__name__} and "
                        f"{type(m).__name__}")
    if n < 0 or m < 0:
        raise RuntimeError(f"eye: n and m must be non-negative, got {n} and {m}")
    return Tensor(np.eye(n, m, dtype=dtype or get_default_dtype()), requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """torch.as_tensor: a Tensor is returned as it is (or cast, differentiably); an ndarray of
    a minitorch dtype (float32, float64, int64, bool) is shared, as from_numpy; anything else
    (other dtypes, lists, numbers) is copied, as tensor()."""
    _cpu("as_tensor", device)
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray) and data.dtype in (np.float32, np.float64, np.int64,
                                                       np.bool_):
        if dtype is None or parse_to(dtype) == data.dtype:
            return from_numpy(data)
    return tensor(data, dtype=dtype)
