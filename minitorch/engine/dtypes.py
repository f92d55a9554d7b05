"""dtypes and torch's promotion rule: which dtype the inputs of an op are cast to.

Knows no Tensor class: it reads `.dtype` and `.ndim`, and casts through `.to()`.
"""

from __future__ import annotations

import numpy as np

float32, float64, int64, bool_ = np.float32, np.float64, np.int64, np.bool_
_default_dtype: type = np.float32


class UnsupportedDType:
    """A torch dtype minitorch does not compute in (float16, bfloat16, int32, ...): it exists so
    a script's dtype table (`{'bfloat16': torch.bfloat16, ...}`) and comparisons work, and any
    use as a dtype is refused in one line naming it (NumPy asks for `.dtype`, which raises)."""

    __slots__ = ("name", "itemsize", "is_floating_point", "is_complex", "is_signed")

    def __init__(self, name: str, itemsize: int, kind: str):
        self.name, self.itemsize = name, itemsize
        self.is_floating_point, self.is_complex = kind == "f", kind == "c"
        self.is_signed = kind != "u"

    def __repr__(self) -> str:
        return f"minitorch.{self.name}"

    @property
    def dtype(self):
        raise TypeError(f"minitorch does not compute in {self.name} (a torch dtype it lacks): "
                        "use float32, float64, int64 or bool")


float16, bfloat16 = UnsupportedDType("float16", 2, "f"), UnsupportedDType("bfloat16", 2, "f")
int32, int16, int8 = (UnsupportedDType(f"int{8 * n}", n, "i") for n in (4, 2, 1))
uint8 = UnsupportedDType("uint8", 1, "u")
complex64 = UnsupportedDType("complex64", 8, "c")
complex128 = UnsupportedDType("complex128", 16, "c")


def set_default_dtype(dtype) -> None:
    """Set the dtype of floating tensors made from Python numbers (default float32, as torch)."""
    global _default_dtype
    if np.dtype(dtype) not in (np.float32, np.float64):
        raise TypeError(f"default dtype must be float32 or float64, got {np.dtype(dtype)}")
    _default_dtype = np.dtype(dtype).type


def get_default_dtype():
    return _default_dtype


_DEVICES = {"cpu", "cuda", "mps", "xpu", "hip", "meta", "xla", "ipu", "vulkan"}


def parse_to(*args, dtype=None, device=None) -> np.dtype | None:
    """The dtype in torch's `.to(...)` arguments (`to(dtype)`, `to(device)`, `to(device,
    dtype)`, `to(other_tensor)`, keywords), or None when only a device is named. minitorch runs
    on the CPU: 'cpu' (or 'cpu:0') is accepted, any other device refused in one line."""
    for arg in (*args, device):
        if arg is None:
            continue
        if isinstance(arg, str):  # a device; torch takes no dtype names here
            kind = arg.split(":")[0]
            if kind in _DEVICES - {"cpu"}:
                raise RuntimeError(f"to(): minitorch runs on the CPU only, got device {arg!r}")
            if kind != "cpu":
                raise RuntimeError(f"to(): expected a device ('cpu') or a dtype, got {arg!r}")
            continue
        if dtype is not None:
            raise TypeError(f"to(): two dtypes given ({dtype} and {arg})")
        is_tensor = hasattr(arg, "shape") and not isinstance(arg, (type, np.dtype))
        dtype = arg.dtype if is_tensor else arg  # to(other) takes other's dtype
    if dtype is None:
        return None
    if isinstance(dtype, UnsupportedDType):
        dtype.dtype  # noqa: B018  (raises, naming it)
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(f"to(): expected a dtype or a device, got {dtype!r}") from None


def is_float(dtype) -> bool:
    return dtype == np.float32 or dtype == np.float64


def result_dtype(*dtypes) -> np.dtype:
    """The module's dtype rule: any float64 -> float64; else any float32 -> float32; else the
    NumPy result type of the (integer or bool) dtypes."""
    if any(d == np.float64 for d in dtypes):
        return np.dtype(np.float64)
    if any(d == np.float32 for d in dtypes):
        return np.dtype(np.float32)
    return np.result_type(*dtypes)


def promote_types(*tensors) -> np.dtype:
    """torch's rule for the common dtype: tensors with dimensions decide it; 0-d tensors only
    when they are of a higher category (bool < integer < floating) than every dimensioned one.
    So float32 (3,) * float64 () is float32, and int64 (3,) * float64 () is float64."""
    dims = [t.dtype for t in tensors if t.ndim]
    zeros = [t.dtype for t in tensors if not t.ndim]
    if not dims or not zeros:
        return result_dtype(*(dims or zeros))
    higher, lower = result_dtype(*dims), result_dtype(*zeros)
    if is_float(higher):
        return higher
    if higher == np.bool_ or is_float(lower):
        return result_dtype(higher, lower)
    return higher


def promote(*tensors) -> list:
    """Cast every tensor to their common dtype (through the differentiable astype op)."""
    first = tensors[0].dtype if tensors else None
    if all(t.dtype == first for t in tensors):  # the common case: one dtype already
        return list(tensors)
    dtype = promote_types(*tensors)
    return [t if t.dtype == dtype else t.to(dtype) for t in tensors]
