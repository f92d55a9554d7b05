"""Activation modules (torch.nn names and constructor arguments): each forward is one call of
nn.functional; extra_repr gives torch's repr text. Nothing here holds parameters."""

from __future__ import annotations

from ..engine import Tensor
from . import functional as F
from .module import Module


class _Stateless(Module):
    """A module with no state but its constructor arguments; repr as torch: `ReLU()`."""

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.extra_repr()})"


class ReLU(_Stateless):
    """max(x, 0) (F.relu); inplace=True writes into the input, as torch."""

    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(_Stateless):
    """x * Phi(x) (F.gelu); approximate 'none' (erf) or 'tanh'."""

    def __init__(self, approximate: str = "none"):
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(_Stateless):
    """x * sigmoid(x) (F.silu)."""

    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(_Stateless):
    def forward(self, input: Tensor) -> Tensor:
        return input.tanh()


class Sigmoid(_Stateless):
    def forward(self, input: Tensor) -> Tensor:
        return input.sigmoid()


class LeakyReLU(_Stateless):
    """x where x > 0, else negative_slope * x (F.leaky_relu)."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(_Stateless):
    """x where x > 0, else alpha * (exp(x) - 1) (F.elu)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(_Stateless):
    """log(1 + exp(beta x)) / beta, linear where beta x > threshold (F.softplus)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(_Stateless):
    """softmax along dim (None: torch's legacy implicit dim, F.softmax)."""

    def __init__(self, dim: int | None = None):
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(_Stateless):
    """log_softmax along dim (None: torch's legacy implicit dim, F.log_softmax)."""

    def __init__(self, dim: int | None = None):
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Identity(_Stateless):
    """Returns its input; any constructor arguments are ignored (as torch)."""

    def __init__(self, *args, **kwargs):
        pass

    def forward(self, input: Tensor) -> Tensor:
        return input


class Flatten(_Stateless):
    """input.flatten(start_dim, end_dim): (N, *) -> (N, prod(*)) by default."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class _Inplace(_Stateless):
    """An activation whose only argument is torch's inplace flag; `fn` is its F function."""

    def __init__(self, inplace: bool = False):
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self).fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class SELU(_Inplace):
    """scale * elu(x, alpha) with torch's constants (F.selu)."""

    fn = staticmethod(F.selu)


class ReLU6(_Inplace):
    """min(max(x, 0), 6) (F.relu6)."""

    fn = staticmethod(F.relu6)


class Hardsigmoid(_Inplace):
    """x/6 + 1/2 clipped to [0, 1] (F.hardsigmoid)."""

    fn = staticmethod(F.hardsigmoid)


class Hardswish(_Inplace):
    """x * relu6(x + 3) / 6 (F.hardswish); its repr never shows inplace, as torch's."""

    fn = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""


class Mish(_Inplace):
    """x * tanh(softplus(x)) (F.mish)."""

    fn = staticmethod(F.mish)


class CELU(_Stateless):
    """x where x > 0, else alpha * (exp(x / alpha) - 1) (F.celu)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Hardtanh(_Stateless):
    """x clipped to [min_val, max_val] (F.hardtanh)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (
            ", inplace=True" if self.inplace else "")


class Softsign(_Stateless):
    """x / (1 + |x|) (F.softsign)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class LogSigmoid(_Stateless):
    """log(sigmoid(x)) in its stable form (F.logsigmoid)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Softmin(_Stateless):
    """softmax(-x) along dim (None: torch's legacy implicit dim, F.softmin)."""

    def __init__(self, dim: int | None = None):
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
