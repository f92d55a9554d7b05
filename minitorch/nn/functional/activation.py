"""Activations: relu, gelu, tanh, sigmoid, softmax, log_softmax (Tensor methods' ops) and the
composites silu, leaky_relu, elu, softplus (torch.nn.functional names and signatures)."""

from __future__ import annotations

from ...engine import Tensor, composite, where
from ...engine.kernels import require_float


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    return input.gelu(approximate=approximate)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.copy_(input.clone().relu()) if inplace else input.relu()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def _softmax_dim(input: Tensor, dim: int | None) -> int:
    """dim, or torch's legacy choice when it is None: 0 for 0-, 1- and 3-d inputs, else 1."""
    return dim if dim is not None else (0 if input.ndim in (0, 1, 3) else 1)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """torch's F.softmax along dim (None: torch's legacy implicit dim); dtype casts first."""
    x = input if dtype is None else input.to(dtype)
    return x.softmax(_softmax_dim(input, dim))


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype=None) -> Tensor:
    """torch's F.log_softmax along dim (None: torch's legacy implicit dim); dtype casts first."""
    x = input if dtype is None else input.to(dtype)
    return x.log_softmax(_softmax_dim(input, dim))



def _inplace(fn, x: Tensor, inplace: bool) -> Tensor:
    """fn(x), or (torch's inplace=True) x overwritten with fn of a copy of x (whose arrays the
    graph keeps for backward) and returned."""
    return x.copy_(fn(x.clone())) if inplace else fn(x)


@composite("silu")
def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """torch's F.silu: x * sigmoid(x), any shape."""
    require_float("silu", input.data)
    return _inplace(lambda x: x * x.sigmoid(), input, inplace)


@composite("leaky_relu")
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """torch's F.leaky_relu: x where x > 0, else negative_slope * x; gradient at 0 is
    negative_slope (torch's)."""
    require_float("leaky_relu", input.data)
    return _inplace(lambda x: where(x > 0.0, x, x * negative_slope), input, inplace)


@composite("elu")
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """torch's F.elu: x where x > 0, else alpha * (exp(x) - 1) (full precision near 0);
    gradient at 0 is alpha (torch's)."""
    require_float("elu", input.data)

    def fn(x: Tensor) -> Tensor:
        pos = x > 0.0
        neg = where(pos, 0.0, x)  # no overflow off-branch
        # torch's gradient alpha*exp(x): expm1's own, (y + 1), is 0 in the far left tail
        value = neg.detach().expm1() * alpha
        return where(pos, x, _with_grad(value, neg, neg.detach().exp() * alpha))

    return _inplace(fn, input, inplace)


@composite("softplus")
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """torch's F.softplus: log(1 + exp(beta * x)) / beta, or x where beta * x > threshold."""
    require_float("softplus", input.data)
    z = input * beta
    linear = z > threshold
    soft = where(linear, 0.0, z).exp().log1p() / beta
    return where(linear, input, soft)


def _log_sigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|)), torch's stable form."""
    return where(x < 0.0, x, 0.0) - (-x.abs()).exp().log1p()




def _with_grad(value: Tensor, x: Tensor, grad: Tensor) -> Tensor:
    """value, with gradient grad (a constant, x's shape) with respect to x: torch's own
    backward formula where the derivative of the forward's rounding would differ from it.
    value must not depend on x except through x.detach(). Where x is not finite the gradient
    is 0 (x - x would be nan)."""
    xd = x.detach()
    finite = xd.isfinite()
    zero = where(finite, x, 0.0) - where(finite, xd, 0.0)  # 0, with gradient 1 where finite
    return value + zero * grad.detach()


