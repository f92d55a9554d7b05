"""Activations: relu, gelu, tanh, sigmoid, softmax, log_softmax (Tensor methods' ops) and the
composites silu, leaky_relu, elu, softplus, celu, selu, softsign, logsigmoid, hardtanh, relu6,
hardsigmoid, hardswish, mish, softmin (torch.nn.functional names, signatures and kinks)."""

from __future__ import annotations

import numpy as np

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


_SELU_ALPHA = 1.6732632423543772848170429916717  # torch's (Klambauer et al., 2017)
_SELU_SCALE = 1.0507009873554804934193349852946


@composite("celu")
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """torch's F.celu: x where x > 0, else alpha * (exp(x / alpha) - 1); gradient at 0 is 1
    (torch's, the exp branch's)."""
    require_float("celu", input.data)
    return _inplace(lambda x: where(x > 0.0, x, elu(x / alpha) * alpha), input, inplace)


@composite("selu")
def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """torch's F.selu: scale * elu(x, alpha) with torch's constants; gradient at 0 is
    scale * alpha (torch's)."""
    require_float("selu", input.data)
    return _inplace(lambda x: elu(x, _SELU_ALPHA) * _SELU_SCALE, input, inplace)


@composite("softsign")
def softsign(input: Tensor) -> Tensor:
    """torch's F.softsign: x / (1 + |x|) (integers in the default dtype, as torch's true
    division); gradient 1 / (1 + |x|)^2, 1 at 0."""
    return input / (input.abs() + 1.0)


@composite("logsigmoid")
def logsigmoid(input: Tensor) -> Tensor:
    """torch's F.logsigmoid: log(sigmoid(x)) in the stable form min(x, 0) - log1p(exp(-|x|));
    gradient sigmoid(-x) (torch's formula: 1/2 at 0, where the form has a kink)."""
    require_float("logsigmoid", input.data)
    return _with_grad(_log_sigmoid(input.detach()), input, (-input.detach()).sigmoid())


def _between(x: Tensor, lo: float, hi: float) -> Tensor:
    """lo < x < hi (strictly): where torch's clipping activations pass the gradient."""
    return (x > lo).bitwise_and(x < hi)


@composite("hardtanh")
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """torch's F.hardtanh: x clipped to [min_val, max_val]; gradient 1 strictly inside, 0 at
    and beyond the bounds (torch's). An integer input stays integer (clipped, then truncated to
    its dtype, as torch); bool is refused."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
    if input.dtype == np.bool_:
        raise TypeError("hardtanh: bool inputs are not supported (as torch): cast first")
    if not input.is_floating_point():
        return input.double().clamp(min_val, max_val).to(input.dtype)

    def fn(x: Tensor) -> Tensor:
        return where(_between(x, min_val, max_val), x, x.detach().clamp(min_val, max_val))

    return _inplace(fn, input, inplace)


@composite("relu6")
def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """torch's F.relu6: hardtanh(x, 0, 6); gradient 0 at 0 and at 6 (torch's)."""
    return hardtanh(input, 0.0, 6.0, inplace)


@composite("hardsigmoid")
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """torch's F.hardsigmoid: x/6 + 1/2 clipped to [0, 1]; gradient 1/6 strictly inside
    (-3, 3), 0 at -3 and 3. torch's backward multiplies by the float32 constant 1/6 in every
    dtype (0.16666667163...), and so does this one."""
    require_float("hardsigmoid", input.data)

    def fn(x: Tensor) -> Tensor:
        inside = _between(x.detach(), -3.0, 3.0)
        value = where(inside, x.detach() / 6.0 + 0.5, (x.detach() > 0.0).to(x.dtype))
        return _with_grad(value, x, where(inside, _ONE_SIXTH_F32, 0.0).to(x.dtype))

    return _inplace(fn, input, inplace)


_ONE_SIXTH_F32 = 0.1666666716337204  # float32(1/6) as a float, torch's hardsigmoid_backward


@composite("hardswish")
def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """torch's F.hardswish: x * relu6(x + 3) / 6; gradient (2x + 3)/6 strictly inside (-3, 3),
    0 at and below -3, 1 at and above 3 (torch's)."""
    require_float("hardswish", input.data)

    def fn(x: Tensor) -> Tensor:
        inner = where(x < 3.0, x * (x + 3.0) / 6.0, x)
        return where(x <= -3.0, x * 0.0, inner)

    return _inplace(fn, input, inplace)


@composite("mish")
def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """torch's F.mish: x * tanh(softplus(x))."""
    require_float("mish", input.data)
    return _inplace(lambda x: x * softplus(x).tanh(), input, inplace)


@composite("softmin")
def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """torch's F.softmin: softmax(-x) along dim (None: torch's legacy implicit dim); dtype casts
    first."""
    x = input if dtype is None else input.to(dtype)
    return (-x).softmax(_softmax_dim(input, dim))


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


