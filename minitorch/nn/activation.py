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
