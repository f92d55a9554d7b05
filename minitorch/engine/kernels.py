"""Pure forward kernels: NumPy arrays in, NumPy arrays out; no Tensor, no graph, no ctx.

The autograd ops (engine/ops) and graph-free inference (the nn modules' `infer` methods) call
these same functions, so each layer's forward math is written once. A kernel returns, besides
its output, what the op's vjp needs, so the op saves it instead of recomputing it.
Shapes: B batch, T time, C width, nh heads, hs head size.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .pool import empty

GELU_C = math.sqrt(2.0 / math.pi)


class ArgumentError(ValueError, RuntimeError):
    """A bad shape or argument: Python's ValueError, and the RuntimeError torch raises, so a
    ported script's `except RuntimeError` catches it as torch's would."""


def rows(a: np.ndarray) -> np.ndarray:
    """(..., n) -> (rows, n), without copying when a is contiguous; also when a has no elements
    (reshape(-1, 0) would be ambiguous)."""
    if a.size:
        return a.reshape(-1, a.shape[-1])
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])


SMALL = 4096  # elements below which a temporary is cheaper than einsum's set-up


def row_sum(a: np.ndarray) -> np.ndarray:
    """Sum over the last dim, kept as size 1. Large float arrays as one BLAS matrix-vector
    product with ones: ~5x faster than NumPy's reduction over a short last dim (64)."""
    if a.size < SMALL or a.dtype.kind != "f":
        return np.add.reduce(a, axis=-1, keepdims=True)
    return (rows(a) @ _constant(1, a.shape[-1], a.dtype)).reshape(a.shape[:-1] + (1,))


def col_sum(a: np.ndarray) -> np.ndarray:
    """Sum of a 2-D (rows, n) array over its rows -> (n,); large float arrays as ones @ a
    (~5x faster than a.sum(axis=0))."""
    if a.size < SMALL or a.dtype.kind != "f":
        return a.sum(axis=0)
    return _constant(1, a.shape[0], a.dtype) @ a


@functools.lru_cache(maxsize=64)
def _constant(value: float, n: int, dtype: np.dtype) -> np.ndarray:
    """n copies of value, read-only and kept: the ones of row_sum and col_sum, relu's zeros;
    the same few every step."""
    a = np.full(n, value, dtype)
    a.setflags(write=False)
    return a


def row_mean(a: np.ndarray) -> np.ndarray:
    """Mean over the last dim, kept as size 1 (0 for an empty last dim, whose rows are empty)."""
    return row_sum(a) / width(a)


def row_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum(a*b) over the last dim, kept as size 1; large arrays without an (..., n) temporary."""
    if a.size < SMALL:  # one token at a time (generation): the ufuncs cost less than einsum
        return np.add.reduce(a * b, axis=-1, keepdims=True)
    return np.einsum("...c,...c->...", a, b)[..., None]


def width(a: np.ndarray) -> int:
    """The last dim's size as a divisor (1 when empty: there is nothing to divide)."""
    return max(a.shape[-1], 1)


def require_float(op: str, x: np.ndarray) -> None:
    """Raise, as torch does, when an op that is only defined on floating-point values (and would
    truncate or overflow on integers) gets another dtype."""
    if x.dtype.kind != "f":
        raise TypeError(f"{op} needs a floating-point input, got {x.dtype} (as torch: cast first)")


def linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """y = x @ w^T + b: x (..., in), w (out, in), b (out,) -> (..., out); one GEMM for all rows
    (NumPy would run one per leading index), except for a few rows (generation), where the
    reshapes cost more than they save."""
    if x.size < SMALL:
        y = x @ w.T
    else:
        x2 = rows(x)
        y = np.matmul(x2, w.T, out=empty((x2.shape[0], w.shape[0]), np.result_type(x, w)))
        y = y.reshape(x.shape[:-1] + (w.shape[0],))
    if b is not None:
        y += b
    return y


def standardize(x: np.ndarray, eps: float):
    """(xhat, rstd): xhat = (x - mean)/sqrt(var + eps) over the last dim (biased var),
    rstd (..., 1): layer_norm before its weight and bias."""
    require_float("layer_norm", x)
    mean = row_mean(x)
    xhat = np.subtract(x, mean, out=empty(x.shape, np.result_type(x, mean)))
    rstd = 1.0 / np.sqrt(row_dot(xhat, xhat) / width(x) + eps)  # (..., 1)
    xhat *= rstd
    return xhat, rstd


def rms_scale(x: np.ndarray, eps: float):
    """(xhat, rstd): xhat = x/sqrt(mean(x^2) + eps) over the last dim: rms_norm before its
    weight."""
    require_float("rms_norm", x)
    rstd = 1.0 / np.sqrt(row_dot(x, x) / width(x) + eps)  # (..., 1)
    return np.multiply(x, rstd, out=empty(x.shape, np.result_type(x, rstd))), rstd


def layer_norm(x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None, eps: float):
    """(y, xhat, rstd): y = xhat*w + b (w, b optional), xhat and rstd from standardize."""
    xhat, rstd = standardize(x, eps)
    y = empty(x.shape, xhat.dtype if w is None else np.result_type(xhat, w))
    if w is not None:
        np.multiply(xhat, w, out=y)
    else:
        np.copyto(y, xhat)
    if b is not None:
        y += b
    return y, xhat, rstd


def rms_norm(x: np.ndarray, w: np.ndarray | None, eps: float):
    """(y, xhat, rstd): y = xhat*w, xhat and rstd from rms_scale."""
    xhat, rstd = rms_scale(x, eps)
    if w is None:
        return xhat, xhat, rstd
    return np.multiply(xhat, w, out=empty(x.shape, np.result_type(xhat, w))), xhat, rstd


def norm_linear(x: np.ndarray, nw: np.ndarray, nb: np.ndarray | None, w: np.ndarray,
                b: np.ndarray | None, eps: float, rms: bool = False):
    """(y, xhat, rstd): y = linear(norm(x), w, b) for norm = layer_norm(., nw, nb) or, with
    rms, rms_norm(., nw), without forming norm(x) = xhat*nw + nb: its scale folds into w's
    columns (fold) and its shift into the bias, b + w @ nb."""
    xhat, rstd = rms_scale(x, eps) if rms else standardize(x, eps)
    if nb is not None:
        b = w @ nb if b is None else b + w @ nb
    return linear(xhat, fold(w, nw), b), xhat, rstd


def fold(w: np.ndarray, nw: np.ndarray) -> np.ndarray:
    """w*nw, a weight (out, in) with its columns scaled: made afresh for each use rather than
    kept from forward to backward (weight-sized, it costs less than it would hold)."""
    return np.multiply(w, nw, out=empty(w.shape, np.result_type(w, nw)))


def _horner(p: list | np.ndarray, v: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """p[0] + p[1] v + ... + p[-1] v^deg elementwise (deg >= 1), into out when given."""
    y = np.multiply(v, p[-1], out=out)
    for c in p[-2:0:-1]:
        y += c
        y *= v
    y += p[0]
    return y


def _zero_d(coefficients: tuple[float, ...]) -> list[np.ndarray]:
    """Coefficients as 0-d arrays: NumPy adds one to an array in ~0.45 us a call against ~0.8
    for a float, and erf's tail runs its polynomials on small arrays."""
    arrays = [np.array(c) for c in coefficients]
    for a in arrays:
        a.setflags(write=False)
    return arrays


# erf's three polynomials (see erf), lowest power first: least-squares fits at Chebyshev points
# of their intervals to math.erf and math.erfc, made by fit_erf_pieces in
# verification/test_erf.py, which checks that the fit still gives these (stored, so that every
# machine computes erf with the same bits).
_ERF_SMALL = _zero_d((
    0.12837916709551256, -0.3761263890318361, 0.11283791670948065, -0.026866170643659735,
    0.005223977610075569, -0.0008548326099382967, 0.0001205529823772698, -1.4924795984617613e-05,
    1.644811271372808e-06, -1.6213550480540648e-07, 1.3741450628550741e-08, -7.835296383120564e-10,
))
_ERF_MID = _zero_d((
    0.9661051464753108, 0.11893028922363065, -0.1783954338354449, 0.13875200409400926,
    -0.04459885845886023, -0.014866286140504661, 0.019326172001053885, -0.004743053514487322,
    -0.002362677700792262, 0.0017098237457509153, -9.291305219874364e-05, -0.0002544803186477847,
    7.76799408143217e-05, 1.809445256095861e-05, -1.4047008152155682e-05, 2.685128606951231e-07,
    1.4254014865596567e-06,
))
_ERF_TAIL = _zero_d((
    0.13699945717769346, -0.03238350961425406, 0.0074654360139940834, -0.0016810945420749962,
    0.0003706507055967741, -7.951079886921621e-05, 1.687718349153124e-05, -4.400765935804853e-06,
    -7.484685219716397e-07, -1.442397453868135e-06, -6.911481587188017e-07, -2.573949922462021e-07,
    -5.111310634561795e-08, -5.316818159683696e-09,
))


def _erf_tail(x: np.ndarray) -> np.ndarray:
    """erf for |x| >= 1, float64 (see erf)."""
    a = np.abs(x)
    y = _horner(_ERF_MID, a - 1.5)
    far = np.flatnonzero(a >= 2.0)
    if far.size:
        c = np.minimum(a[far], 6.0)  # erf rounds to 1 from 5.9216 on, and so does this form
        g = _horner(_ERF_TAIL, c - 4.0)
        g *= np.exp(-c * c)
        y[far] = 1.0 - g
    return np.copysign(y, x, out=y)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function elementwise, in float64 (NumPy has none), from three polynomials whose
    coefficients are stored above:

    - |x| < 1:      erf(x) = x + x Q(x^2), Q of degree 11 in t = x^2 (Q ~ erf(x)/x - 1; adding x
      last keeps the rounding of x Q small); odd by construction, so -0 stays -0.
    - 1 <= |x| < 2: erf(|x|) = M(|x| - 1.5), M of degree 16.
    - |x| >= 2:     erf(|x|) = 1 - exp(-c^2) G(c - 4), c = min(|x|, 6), G of degree 13 (G ~
      exp(c^2) erfc(c), smooth where erfc is not); it rounds to 1 where erf does, from 5.9216.

    Each polynomial is a least-squares fit at Chebyshev points of its interval to math.erf (for
    G, math.erfc, weighted by exp(-c^2): the error that reaches erf), in powers of its variable
    for Horner's rule. In cache-sized pieces, the first form runs on every element (cheaper
    than selecting), then the elements |x| >= 1 are recomputed with the sign restored by
    copysign: erf(-x) = -erf(x) bit for bit; erf(+-inf) = +-1, nan stays nan.

    Measured within 1 ulp of math.erf (the C library's) on dense grids of tiny, [-7, 7] and huge
    |x|; verification/test_erf.py holds it to 2. On a shared (noisy) 2-core AMD EPYC, 10^5..10^6
    elements of N(0, 1/2), GELU's x/sqrt 2, take 9-13 ns an element against 70-125 for math.erf
    element by element (7-12x); N(0, 1) 11-17 ns; uniform on [-7, 7], mostly |x| >= 2 (np.exp),
    25-40."""
    x = np.asarray(x)
    y = np.empty(x.shape)
    xf, yf = x.reshape(-1), y.reshape(-1)
    # |x| >= 1 meets overflow (x^2) or inf - inf in the first form: recomputed by _erf_tail
    with np.errstate(over="ignore", invalid="ignore"):
        for lo in range(0, xf.size, BLOCK):
            xs, ys = np.asarray(xf[lo:lo + BLOCK], dtype=np.float64), yf[lo:lo + BLOCK]
            t = xs * xs
            _horner(_ERF_SMALL, t, out=ys)
            ys *= xs
            ys += xs
            tail = np.flatnonzero(t >= 1.0)  # |x| >= 1, exactly
            if tail.size:
                ys[tail] = _erf_tail(xs[tail])
    return y


def gelu(x: np.ndarray, approximate: str = "none"):
    """(y, aux): exact y = x*Phi(x) with aux = Phi(x) = (1 + erf(x/sqrt 2))/2; or, with
    approximate='tanh', y = x/2 (1 + tanh(u)), u = c (x + 0.044715 x^3), c = sqrt(2/pi),
    computed as y = x*s with aux = s = (1 + tanh(u))/2 = 1/(1 + exp(-2u)).

    The sigmoid form because np.exp is cheaper than np.tanh (measured on an AVX2 AMD EPYC: 1.3-2.0
    against 2.6-3.0 ns an element in float32, 5.1-9.2 against 13.2-14.6 in float64). It is the more
    accurate form below x = -3 or so, where 1 + tanh(u) cancels and 1 + exp(-2u) does not: a
    deliberate difference from torch, whose y there is 0 or off in its leading digits (float32
    x = -8: y = -3.1e-21 here, -0.0 in torch; verification/test_torch_semantics.py).
    Integer inputs are refused, as torch refuses them."""
    require_float("gelu", x)
    if approximate == "tanh":  # in place: two activation-sized arrays, not one per operation
        s = np.multiply(x, x, out=empty(x.shape, x.dtype))  # an array even when 0-d
        s *= -2.0 * 0.044715 * GELU_C
        s -= 2.0 * GELU_C
        s *= x  # -2u = x (-2c - 2c 0.044715 x^2): one pass fewer than from x^3
        with np.errstate(over="ignore"):  # exp(-2u) = inf for x << 0: s = 0, y = -0.0
            np.exp(s, out=s)
        s += 1.0
        np.reciprocal(s, out=s)
        return np.multiply(x, s, out=empty(x.shape, x.dtype)), s
    if approximate != "none":
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    cdf = (0.5 * (1.0 + erf(x * math.sqrt(0.5)))).astype(x.dtype, copy=False)
    return x * cdf, cdf


BLOCK = 1 << 15  # elements per piece of a blocked pass (relu's mask, the optimizers' slices)


def relu(x: np.ndarray) -> np.ndarray:
    """max(x, 0); contiguous float arrays piece by piece against BLOCK zeros (the same values):
    np.maximum against an array takes NumPy's SIMD loop, against the scalar 0 a loop 2.2-2.8x
    slower (measured at (1024, 256), float32 and float64)."""
    out = empty(x.shape, x.dtype)  # an integer tensor stays integer, as torch
    if not x.flags.c_contiguous:
        return np.maximum(x, 0, out=out)
    xf, of, zeros = x.reshape(-1), out.reshape(-1), _constant(0, BLOCK, out.dtype)
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        np.maximum(xf[lo:hi], zeros[:hi - lo], out=of[lo:hi])
    return out


def relu_grad(g: np.ndarray, y: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """g * (y > 0) for relu's output y, into `out` (may be g itself) or a new array; over
    contiguous arrays in pieces of BLOCK elements, so the boolean mask is one small reused
    buffer instead of an activation-sized temporary."""
    if out is None:
        out = empty(g.shape, g.dtype)
    if g.size <= BLOCK or not (g.flags.c_contiguous and y.flags.c_contiguous
                               and out.flags.c_contiguous):
        return np.multiply(g, y > 0, out=out)
    gf, yf, of = g.reshape(-1), y.reshape(-1), out.reshape(-1)
    mask = np.empty(BLOCK, dtype=bool)
    for lo in range(0, g.size, BLOCK):
        hi = min(lo + BLOCK, g.size)
        np.multiply(gf[lo:hi], np.greater(yf[lo:hi], 0, out=mask[:hi - lo]), out=of[lo:hi])
    return out


def rope_tables(T: int, hs: int, offset: int = 0, theta: float = 10000.0, dtype=np.float64):
    """cos and sin tables (T, hs/2) for positions offset..offset+T-1 (rotate-half convention)."""
    if hs % 2:
        raise ValueError(f"RoPE needs an even head size, got {hs}")
    inv_freq = theta ** (-np.arange(0, hs, 2, dtype=np.float64) / hs)  # (hs/2,)
    angles = np.arange(offset, offset + T, dtype=np.float64)[:, None] * inv_freq  # (T, hs/2)
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, inverse: bool = False) -> np.ndarray:
    """RoPE on the last dim (rotate-half pairs): (x1, x2) -> (x1 c - x2 s, x2 c + x1 s); the
    inverse (the vjp of the rotation) uses -s. Computed over the whole width, as
    x*[c, c] + [x2, x1]*[-s, s] (the same bits: a + (-b) is a - b), so each ufunc runs along
    rows of a head's width: along its halves (8 wide at 4 heads of 16) NumPy's per-row cost
    made the rotation 3.6x slower (float32)."""
    half = x.shape[-1] // 2
    if inverse:
        sin = -sin
    dtype = np.result_type(x, cos, sin)
    out = np.multiply(x, np.concatenate([cos, cos], axis=-1), out=empty(x.shape, dtype))
    swapped = empty(x.shape, dtype)
    swapped[..., :half] = x[..., half:]
    swapped[..., half:] = x[..., :half]
    swapped *= np.concatenate([-sin, sin], axis=-1)
    out += swapped
    return out


def split_heads(qkv: np.ndarray, n_head: int):
    """q, k, v, each (B, nh, T, hs), from the fused projection (B, T, 3C) laid out q|k|v."""
    B, T, C3 = qkv.shape
    if n_head < 1 or C3 % (3 * n_head):
        raise ValueError(f"last dim {C3} is not 3 * n_head({n_head}) * head_size")
    return qkv.reshape(B, T, 3, n_head, C3 // 3 // n_head).transpose(2, 0, 3, 1, 4)


def merge_heads(y: np.ndarray) -> np.ndarray:
    """(B, nh, T, hs) -> (B, T, nh*hs), heads side by side (a view of y for one head)."""
    B, nh, T, hs = y.shape
    if nh == 1:
        return y.reshape(B, T, hs)
    out = empty((B, T, nh * hs), y.dtype)
    np.copyto(out.reshape(B, T, nh, hs), y.transpose(0, 2, 1, 3))
    return out


def attention_scale(hs: int) -> float:
    """1/sqrt(hs), the attention temperature; any value for hs = 0 (no features: y is empty)."""
    return 1.0 / math.sqrt(hs) if hs else 1.0


@functools.lru_cache(maxsize=64)
def causal_bias(Tq: int, Tk: int, dtype: np.dtype) -> np.ndarray:
    """(Tq, Tk): 0 where query i (the last Tq of Tk positions) may see key j, -inf where it may
    not (j > i + Tk - Tq); cached and read-only (adding it costs a tenth of a masked write)."""
    bias = np.where(np.triu(np.ones((Tq, Tk), dtype=bool), k=Tk - Tq + 1), -np.inf, 0.0)
    bias = bias.astype(dtype)
    bias.setflags(write=False)
    return bias


def causal_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray):
    """(y, P): P = softmax(q k^T/sqrt(hs)) with query i (the last Tq of Tk positions) seeing keys
    j <= i + Tk - Tq; y = P v. q (..., Tq, hs), k and v (..., Tk, hs) -> y (..., Tq, hs)."""
    Tq, Tk = q.shape[-2], k.shape[-2]
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    att = np.matmul(q, k.swapaxes(-1, -2), out=empty(batch + (Tq, Tk), np.result_type(q, k)))
    att *= attention_scale(q.shape[-1])
    if Tq > 1:  # a single query (generation) sees every cached key
        att += causal_bias(Tq, Tk, att.dtype)  # added, as torch adds its -inf bias
    if Tk:  # no keys: nothing to normalize (and no maximum to take)
        att -= np.maximum.reduce(att, axis=-1, keepdims=True)
        np.exp(att, out=att)
        att /= row_sum(att)
    batch = np.broadcast_shapes(att.shape[:-2], v.shape[:-2])
    y = np.matmul(att, v, out=empty(batch + (Tq, v.shape[-1]), np.result_type(att, v)))
    return y, att


def check_targets(targets: np.ndarray, logits_shape: tuple[int, ...]) -> None:
    """Raise unless targets are integer ids in [0, V) shaped like the logits without V."""
    V = logits_shape[-1]
    if targets.dtype.kind not in "iu":
        raise TypeError(f"cross_entropy targets must be integers, got dtype {targets.dtype}")
    if targets.shape != logits_shape[:-1]:
        raise ArgumentError(f"cross_entropy targets shape {targets.shape} does not match logits "
                         f"shape {logits_shape} without its last dim")
    if targets.size and (targets.min() < 0 or targets.max() >= V):
        raise IndexError(f"cross_entropy target id out of range [0, {V}): min {targets.min()}, "
                         f"max {targets.max()}")
