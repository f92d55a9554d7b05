"""asv: forward and forward+backward of every registered op and composite, at model sizes.

The parameter lists come from minitorch.REGISTRY and minitorch.COMPOSITES, so a new op is
benchmarked without extra code: INPUTS below holds makers only for ops whose inputs cannot be
guessed from the signature (non-float inputs, required attributes, variadic inputs). An op that
gets no working inputs makes its benchmark fail with a message listing every such op;
`python -m benchmarks.bench_ops` prints the same list and exits 1.
"""

from __future__ import annotations

import inspect
import sys

import numpy as np

from minitorch import COMPOSITES, REGISTRY, Tensor, apply

from .harness import SEED

B, T, C, V = 32, 64, 64, 65  # the seed preset's batch 32, block 64, width 64, vocab 65
SHAPE = (B, T, C)
DTYPES = ["float32", "float64"]


def _floats(rng, dtype, *shapes, low=0.5, high=1.5):
    """Float tensors that require grad, values in [low, high) (inside every op's domain)."""
    return [Tensor(rng.uniform(low, high, s).astype(dtype), requires_grad=True) for s in shapes]


def _attn(rng, dtype):
    return _floats(rng, dtype, (B, 1, T, T))


INPUTS = {  # name -> maker(rng, dtype) -> (args, attrs); everything else uses _default
    "pow": lambda rng, dt: (_floats(rng, dt, SHAPE), {"exponent": 2.0}),
    "astype": lambda rng, dt: (_floats(rng, dt, SHAPE),
                               {"dtype": np.float64 if dt == "float32" else np.float32}),
    "where": lambda rng, dt: ([Tensor(rng.random(SHAPE) < 0.5), *_floats(rng, dt, SHAPE, SHAPE)],
                              {}),
    "masked_fill": lambda rng, dt: ([*_attn(rng, dt), Tensor(np.triu(np.ones((T, T), bool), 1))],
                                    {"value": -1e9}),
    "bitwise_not": lambda rng, dt: ([Tensor(rng.random(SHAPE) < 0.5)], {}),  # masks
    **{n: lambda rng, dt: ([Tensor(rng.random(SHAPE) < 0.5), Tensor(rng.random(SHAPE) < 0.5)], {})
       for n in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    "scatter_reduce": lambda rng, dt: (_floats(rng, dt, SHAPE, SHAPE),  # index: an array
                                       {"index": rng.integers(0, C, SHAPE), "axis": -1,
                                        "reduce": "sum"}),
    "einsum": lambda rng, dt: (_floats(rng, dt, SHAPE, (C, C)), {}),  # EQUATIONS below
    "index_put": lambda rng, dt: (_floats(rng, dt, SHAPE, (B, C)),  # x[:, 0] = v
                                  {"stages": ((slice(None), 0),)}),
    "matmul": lambda rng, dt: (_floats(rng, dt, SHAPE, (C, 3 * C)), {}),  # a Linear's GEMM
    "sum": lambda rng, dt: (_floats(rng, dt, SHAPE), {"axis": -1, "keepdims": True}),
    "mean": lambda rng, dt: (_floats(rng, dt, SHAPE), {"axis": -1, "keepdims": True}),
    "var": lambda rng, dt: (_floats(rng, dt, SHAPE), {"axis": -1, "keepdims": True, "ddof": 0}),
    "max": lambda rng, dt: (_floats(rng, dt, SHAPE), {"axis": -1, "keepdims": True}),
    "argmax": lambda rng, dt: (_floats(rng, dt, SHAPE), {"axis": -1}),
    "softmax": lambda rng, dt: (_attn(rng, dt), {"axis": -1}),
    "log_softmax": lambda rng, dt: (_floats(rng, dt, (B * T, V)), {"axis": -1}),
    "reshape": lambda rng, dt: (_floats(rng, dt, SHAPE), {"shape": (B, T, 1, C)}),
    "broadcast_to": lambda rng, dt: (_floats(rng, dt, (T, C)), {"shape": SHAPE}),  # wpe over B
    "permute": lambda rng, dt: (_floats(rng, dt, (B, T, 1, C)), {"axes": (0, 2, 1, 3)}),
    "getitem": lambda rng, dt: (_floats(rng, dt, (B, T, 3 * C)),
                                {"index": (Ellipsis, slice(C, 2 * C))}),  # one of q, k, v
    "concatenate": lambda rng, dt: (_floats(rng, dt, (B, T, C // 2), (B, T, C // 2)),
                                    {"axis": -1}),
    "stack": lambda rng, dt: (_floats(rng, dt, SHAPE, SHAPE), {"axis": 0}),
    "embedding": lambda rng, dt: ([Tensor(rng.integers(0, V, (B, T))), *_floats(rng, dt, (V, C))],
                                  {}),
    "cumsum": lambda rng, dt: (_floats(rng, dt, SHAPE), {"axis": 1}),
    "cumprod": lambda rng, dt: (_floats(rng, dt, SHAPE), {"axis": 1}),
    **{n: lambda rng, dt: (_floats(rng, dt, SHAPE), {"dim": 1}) for n in ("cummax", "cummin")},
    "diag": lambda rng, dt: (_floats(rng, dt, (T, T)), {}),  # a (T, T) matrix's diagonal
    "round_decimals": lambda rng, dt: (_floats(rng, dt, SHAPE), {"decimals": 2}),
    **{n: lambda rng, dt: (_floats(rng, dt, SHAPE), {"dim": -1}) for n in ("var_mean",
                                                                          "std_mean")},
    "binary_cross_entropy": lambda rng, dt: (_floats(rng, dt, SHAPE, SHAPE, low=0.05,
                                                     high=0.95), {}),
    "batch_norm": lambda rng, dt: (  # (N, C) rows in training mode, weight and bias
        [_floats(rng, dt, (B * T, C))[0], None, None, *_floats(rng, dt, (C,), (C,))],
        {"training": True}),
    "nll_loss": lambda rng, dt: ([*_floats(rng, dt, (B * T, V)),
                                  Tensor(rng.integers(0, V, (B * T,)))], {}),
    # composites
    "linear": lambda rng, dt: (_floats(rng, dt, SHAPE, (3 * C, C), (3 * C,)), {}),
    "layer_norm": lambda rng, dt: (_floats(rng, dt, SHAPE, (C,), (C,)), {}),
    "rms_norm": lambda rng, dt: (_floats(rng, dt, SHAPE, (C,)), {}),
    "cross_entropy": lambda rng, dt: ([*_floats(rng, dt, (B, T, V)),
                                       Tensor(rng.integers(0, V, (B, T)))], {}),
    "scaled_dot_product_attention": lambda rng, dt: (
        _floats(rng, dt, (B, 4, T, C // 4), (B, 4, T, C // 4), (B, 4, T, C // 4)), {}),
    "rope": lambda rng, dt: (_floats(rng, dt, (B, 4, T, C // 4)),
                             dict(zip(("cos", "sin"), _rope_tables(dt)))),
    "causal_self_attention": lambda rng, dt: (_floats(rng, dt, (B, T, 3 * C)), {"n_head": 4}),
    "norm_linear": lambda rng, dt: (  # ln_1 folded into c_attn: x, norm w and b, weight, bias
        _floats(rng, dt, SHAPE, (C,), (C,), (3 * C, C), (3 * C,)), {}),
}
# A fused op and the composite it is checked against take the same inputs.
for _name in ("linear", "layer_norm", "rms_norm", "cross_entropy", "causal_self_attention",
              "norm_linear"):
    INPUTS[f"{_name}_composite"] = INPUTS[_name]


def _rope_tables(dtype):
    from minitorch.nn.functional import rope_tables

    return rope_tables(T, C // 4, dtype=np.dtype(dtype))


def _default(fn):
    """Inputs from the signature: one float tensor of SHAPE per required positional argument."""
    params = list(inspect.signature(fn).parameters.values())
    if params and params[0].name == "ctx":
        params = params[1:]
    required = [p for p in params if p.default is inspect.Parameter.empty]
    kinds = {p.kind for p in required}
    if not required or kinds - {inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                inspect.Parameter.POSITIONAL_ONLY}:
        return None  # variadic or keyword-only requirements: cannot guess
    return lambda rng, dt: (_floats(rng, dt, *[SHAPE] * len(required)), {})


def _target(name: str):
    return REGISTRY[name].forward if name in REGISTRY else COMPOSITES[name]


def maker(name: str):
    return INPUTS.get(name) or _default(_target(name))


# Composites whose signature (torch's) puts a non-tensor between the tensors they take.
NORMALIZED = {"layer_norm_composite", "rms_norm_composite"}  # (x, normalized_shape, w, ...)
EQUATIONS = {"einsum": "btc,cd->btd"}  # composites whose first argument is a subscript string


def run_forward(name: str, args, attrs):
    if name in REGISTRY:
        return apply(REGISTRY[name], *args, **attrs)
    if name in NORMALIZED:
        x, *params = args
        return COMPOSITES[name](x, x.shape[-1:], *params, **attrs)
    if name in EQUATIONS:
        return COMPOSITES[name](EQUATIONS[name], *args, **attrs)
    out = COMPOSITES[name](*args, **attrs)
    return out[0] if isinstance(out, tuple) else out  # (values, indices), (var, mean): the first


def differentiable(name: str) -> bool:
    return name in COMPOSITES or REGISTRY[name].differentiable


def build(name: str, dtype: str):
    """(args, attrs) for `name`, checked by one forward (+ backward where differentiable)."""
    make = maker(name)
    if make is None:
        raise TypeError("no entry in INPUTS and the signature needs non-positional inputs")
    args, attrs = make(np.random.default_rng(SEED), np.dtype(dtype))
    out = run_forward(name, args, attrs)
    if differentiable(name):
        out.backward(np.ones(out.shape, dtype=out.dtype))
    return args, attrs


def unbuildable(dtype: str = "float64") -> dict[str, str]:
    """Every op or composite whose inputs cannot be built, with the reason."""
    bad = {}
    for name in sorted(REGISTRY) + sorted(COMPOSITES):
        try:
            build(name, dtype)
        except Exception as e:  # any failure means the maker does not fit this op
            bad[name] = f"{type(e).__name__}: {e}"
    return bad


def _setup(name: str, dtype: str):
    try:
        return build(name, dtype)
    except Exception as e:
        missing = unbuildable(dtype)
        raise RuntimeError(f"bench_ops: cannot build inputs for {sorted(missing)} ({name}: {e}); "
                           "add a maker to INPUTS in benchmarks/bench_ops.py") from e


class OpForward:
    """Forward of each op/composite with graph recording on (as in training)."""

    params = (sorted(REGISTRY) + sorted(COMPOSITES), DTYPES)
    param_names = ["op", "dtype"]
    timeout = 120

    def setup(self, name, dtype):
        self.name, (self.args, self.attrs) = name, _setup(name, dtype)

    def time_forward(self, name, dtype):
        run_forward(self.name, self.args, self.attrs)


class OpForwardBackward:
    """Forward + backward (seeded with ones) of each differentiable op/composite."""

    params = (sorted(n for n in REGISTRY if REGISTRY[n].differentiable) + sorted(COMPOSITES),
              DTYPES)
    param_names = ["op", "dtype"]
    timeout = 120

    def setup(self, name, dtype):
        self.name, (self.args, self.attrs) = name, _setup(name, dtype)
        for a in self.args:
            if a is not None:  # (batch_norm's absent running statistics)
                a.grad = None

    def time_forward_backward(self, name, dtype):
        out = run_forward(self.name, self.args, self.attrs)
        out.backward(np.ones(out.shape, dtype=out.dtype))


if __name__ == "__main__":
    missing = unbuildable()
    total = len(REGISTRY) + len(COMPOSITES)
    print(f"{total - len(missing)}/{total} ops and composites have working benchmark inputs")
    for name, why in missing.items():
        print(f"  cannot build inputs for {name}: {why}")
    sys.exit(1 if missing else 0)
