"""Graph-level differential testing against PyTorch: random programs, run in both libraries.

A hypothesis strategy (`programs`) draws small straight-line programs over minitorch's Tensor
methods and nn.functional (fan-out, diamonds, broadcasting, view chains, reductions, 0-d and
zero-size nodes, mixed dtypes, no_grad/detach islands, repeated and accumulating backwards). Each
program is Python source; the same text runs with `lib = minitorch` and with `lib = torch`, and
every node's value, shape, dtype and requires_grad, and every leaf's `.grad`, must agree. A
mismatch is shrunk by hypothesis and printed as a runnable reproducer for both libraries.
Never imported by minitorch. Every program family is generated unconditionally: a family whose
op regresses fails the run rather than dropping out of it.

CLI (the `make fuzz` profile): python -m verification.program_fuzz --programs 100000
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass, field
from functools import cache

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import minitorch as mt  # noqa: E402
from minitorch.nn import functional as mtF  # noqa: E402

RTOL64, RTOL32 = 1e-10, 1e-4  # relative tolerance; the absolute floor is rtol * max(1, max|ref|)
MAG = 1e3  # nodes whose values may exceed this are squashed by tanh before further use
LEAF_SHAPES = [(), (), (1,), (3,), (4,), (2, 3), (3, 1), (1, 4), (3, 4), (2, 3, 4), (2, 1, 4),
               (0,), (2, 0), (0, 3), (2, 0, 3)]


# ---- the program ---------------------------------------------------------------------------------
@dataclass
class Line:
    """One statement. kind: 'stmt' (assigns), 'rec' (record a node), 'recg' (record a leaf's
    grad). `mt`/`torch` are the source in each library (identical unless the APIs differ)."""

    kind: str
    mt: str
    torch: str
    family: str = ""
    label: str = ""
    shape: tuple | None = None  # the generator's idea of a recorded node's shape (self-check)
    dtype: str | None = None  # ... and of its dtype


@dataclass
class Program:
    leaves: dict[str, np.ndarray] = field(default_factory=dict)
    lines: list[Line] = field(default_factory=list)
    families: Counter = field(default_factory=Counter)
    float32: bool = False
    refused: str = ""  # family of the statement both libraries raised at, if any
    deliberate: str = ""  # the DELIBERATE difference the program ran into, if any

    @property
    def rtol(self) -> float:
        return RTOL32 if self.float32 else RTOL64

    def source(self, lib: str, upto: int | None = None, show: str | None = None) -> str:
        """The program text for lib ('mt' or 'torch'). With `show`, records are dropped except
        that label, which becomes a print (the reproducer form); `upto` truncates after a line."""
        out = []
        for ln in self.lines[: None if upto is None else upto + 1]:
            text = ln.mt if lib == "mt" else ln.torch
            if show is not None and ln.kind != "stmt":
                if f"{ln.kind}:{ln.label}" != show:
                    continue
                what = ln.label if ln.kind == "rec" else f"{ln.label}.grad"
                text = f"print({what!r}, {what})"
            out.append(text)
        return "\n".join(out)

    def line_of(self, lineno: int, lib: str) -> int:
        """Index into `lines` of 1-based source line `lineno` of the runtime source."""
        n = 0
        for i, ln in enumerate(self.lines):
            n += (ln.mt if lib == "mt" else ln.torch).count("\n") + 1
            if n >= lineno:
                return i
        return len(self.lines) - 1

    def reproducer(self, upto: int | None = None, show: str | None = None) -> str:
        head = {"mt": ("import minitorch as lib", "from minitorch.nn import functional as F"),
                "torch": ("import torch as lib", "from torch.nn import functional as F")}
        data = [f"_L[{k!r}] = {_literal(a)}" for k, a in self.leaves.items()]
        parts = []
        for lib in ("mt", "torch"):
            body = self.source(lib, upto, show)
            parts.append("\n".join([f"# ---- {'minitorch' if lib == 'mt' else 'torch'}",
                                    "import numpy as np", *head[lib], "_L = {}", *data, body]))
        return "\n\n".join(parts)

    def __repr__(self) -> str:  # hypothesis prints the falsifying example with repr
        return "\n" + self.reproducer() + "\n"


def _literal(a: np.ndarray) -> str:
    dtype = "np.int64" if a.dtype.kind in "iu" else ("np.bool_" if a.dtype == bool else
                                                       "np.float64")
    return f"np.array({a.ravel().tolist()!r}, dtype={dtype}).reshape({a.shape!r})"


# ---- the generator -------------------------------------------------------------------------------
@dataclass
class Node:
    name: str
    shape: tuple
    dtype: str  # 'float32' | 'float64'
    grad: bool  # requires_grad, as the program's semantics say
    lo: float
    hi: float

    @property
    def mag(self) -> float:
        return max(abs(self.lo), abs(self.hi))

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))


@cache
def _ints(a: int, b: int):
    return st.integers(a, b)


class Builder:
    """Draws one program. Every node's value interval is tracked, so domains stay valid (log
    of positive values, exp of bounded ones) by inserting explicit fixer statements."""

    def __init__(self, draw, skip: frozenset = frozenset()):
        self.draw, self.skip = draw, skip
        self.p = Program()
        self.nodes: list[Node] = []
        self.grad_leaves: list[str] = []  # every float leaf (grads recorded for all)
        self.rng = np.random.default_rng(self.int(0, 2**32 - 1))
        # one program in four mixes float32 into float64
        self.mixed = self.int(0, 3) == 3 and "mixed" not in skip
        self.no_grad = False
        self.n = 0

    # -- drawing helpers
    def int(self, a: int, b: int) -> int:
        return self.draw(_ints(a, b)) if b > a else a

    def choice(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def coin(self, percent: int = 50) -> bool:
        return self.int(0, 99) < percent

    # -- emitting
    def fresh(self, prefix="v") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def stmt(self, mt_src: str, torch_src: str | None = None, family: str = "") -> None:
        self.p.lines.append(Line("stmt", mt_src, torch_src or mt_src, family))

    def emit(self, expr, shape, lo, hi, family, dtype=None, grad=None, torch_expr=None) -> Node:
        """`vN = expr`, recorded; returns the new node (under no_grad, inside the block)."""
        name = self.fresh()
        texts = [f"{name} = {e}" for e in (expr, torch_expr or expr)]
        if self.no_grad:
            texts = [f"with lib.no_grad():\n    {t}" for t in texts]
            grad = False
        self.stmt(*texts, family=family)
        self.p.families[family] += 1
        self.p.lines.append(Line("rec", f"_rec({name!r}, {name})", f"_rec({name!r}, {name})",
                                 family, name, tuple(shape), dtype))
        lo, hi = (float(lo), float(hi)) if math.isfinite(lo) and math.isfinite(hi) else (
            -math.inf, math.inf)
        node = Node(name, tuple(shape), dtype, bool(grad), lo, hi)
        self.nodes.append(node)
        return node

    def leaf(self, shape, dtype=None, grad=None, domain="real", keep=True) -> Node:
        """A new leaf tensor with values drawn from `domain` (kept away from kinks at 0)."""
        shape = tuple(shape)
        if dtype is None:
            dtype = "float32" if self.mixed and self.coin(40) else "float64"
        grad = self.coin(75) if grad is None else grad
        if domain == "real" and self.coin(10):
            domain = "ties"  # exact ties and zeros: max/min tie-breaking and kinks at 0
        if domain == "pos":
            vals, lo, hi = self.rng.uniform(0.2, 2.0, shape), 0.2, 2.0
        elif domain == "ints":
            vals, lo, hi = self.rng.integers(-2, 3, shape).astype(np.float64), -2, 2
        elif domain == "ties":
            vals, lo, hi = self.rng.integers(-1, 2, shape) * 0.5, -0.5, 0.5
        else:
            vals = self.rng.uniform(0.1, 2.0, shape) * self.rng.choice([-1.0, 1.0], shape)
            lo, hi = -2.0, 2.0
        if dtype == "float32":
            vals = vals.astype(np.float32).astype(np.float64)  # exactly representable in both
            self.p.float32 = True
        name = self.fresh("x")
        self.p.leaves[name] = vals
        flag = ", requires_grad=True" if grad else ""
        self.stmt(f"{name} = lib.tensor(_L[{name!r}], dtype=lib.{dtype}{flag})", family="leaf")
        node = Node(name, shape, dtype, grad, lo, hi)
        if keep:
            self.nodes.append(node)
            self.grad_leaves.append(name)
        return node

    def const(self, array: np.ndarray, prefix="k") -> str:
        """An integer/bool constant tensor (targets, ids, masks), no grad."""
        name = self.fresh(prefix)
        self.p.leaves[name] = array
        self.stmt(f"{name} = lib.tensor(_L[{name!r}])", family="leaf")
        return name

    # -- picking inputs
    def pick(self, pred=None, fix=True) -> Node | None:
        """An existing node (recent ones first, so values fan out), squashed if it may be big."""
        cands = [n for n in self.nodes if pred is None or pred(n)]
        if not cands:
            return None
        node = cands[-1 - self.int(0, len(cands) - 1)]
        if fix and node.mag > MAG:
            node = self.emit(f"{node.name}.tanh()", node.shape, -1, 1, "fix", node.dtype,
                             node.grad)
        return node

    def positive(self, a: Node) -> Node:
        """a itself if its values are >= 0.05, else a fixer statement making it so."""
        if a.lo >= 0.05:
            return a
        opts = ["sig", "abs"] + (["exp"] if -3 <= a.lo and a.hi <= 4 else []) + (
            ["sq"] if a.mag <= 30 else [])
        kind = self.choice(opts)
        x = a.name
        if kind == "sig":
            return self.emit(f"{x}.sigmoid() + 0.5", a.shape, 0.5, 1.5, "fix", a.dtype, a.grad)
        if kind == "abs":
            return self.emit(f"{x}.abs() + 0.25", a.shape, 0.25, a.mag + 0.25, "fix", a.dtype,
                             a.grad)
        if kind == "exp":
            return self.emit(f"{x}.exp()", a.shape, math.exp(a.lo), math.exp(a.hi), "fix",
                             a.dtype, a.grad)
        return self.emit(f"{x} * {x} + 0.5", a.shape, 0.5, a.mag**2 + 0.5, "fix", a.dtype, a.grad)

    def bounded(self, a: Node, lim: float) -> Node:
        if a.mag <= lim:
            return a
        return self.emit(f"{a.name}.tanh()", a.shape, -1, 1, "fix", a.dtype, a.grad)

    def partner_dtype(self, a: Node, b: Node) -> str:
        """torch's promotion of two floating tensors: a 0-d operand yields to a dimensioned
        one; otherwise float64 wins."""
        if a.dtype == b.dtype:
            return a.dtype
        if (a.shape == ()) != (b.shape == ()):
            return b.dtype if a.shape == () else a.dtype
        return "float64"

    def bcast_shape(self, shape: tuple) -> tuple:
        """A shape that broadcasts against `shape`: itself, a suffix, 1s in places, or more dims."""
        kind = self.int(0, 3)
        if kind == 0 or not shape:
            return shape if kind == 0 else (self.int(1, 3),) * self.int(0, 1) + shape
        if kind == 1:
            return shape[self.int(0, len(shape)):]
        if kind == 2:
            return tuple(1 if self.coin() else s for s in shape)
        return (self.int(1, 2),) + shape

    def build(self) -> Program:
        for i in range(self.int(1, 3)):
            self.leaf(self.choice(LEAF_SHAPES), grad=True if i == 0 else None)
        families = [f for f in FAMILIES if f.__name__ not in self.skip]
        for _ in range(self.int(1, 12)):
            fam = self.choice(families)
            if self.coin(8) and "no_grad" not in self.skip:
                # no views here: torch keeps requires_grad=True on a view made under no_grad
                self.no_grad = True
                self.choice([unary, binary, reduce, softmax, matmul, diamond])(self)
                self.no_grad = False
            else:
                fam(self)
        finish(self)
        return self.p


# ---- families: each appends one motif ------------------------------------------------------------
def _tag(b: Builder, name: str) -> None:
    b.p.families[name] += 1


UNARY = {  # name: (expr, needs, interval fn)
    "neg": ("-{x}", None, lambda lo, hi: (-hi, -lo)),
    "exp": ("{x}.exp()", "bound", lambda lo, hi: (math.exp(lo), math.exp(hi))),
    "log": ("{x}.log()", "pos", lambda lo, hi: (math.log(lo), math.log(hi))),
    "sqrt": ("{x}.sqrt()", "pos", lambda lo, hi: (math.sqrt(lo), math.sqrt(hi))),
    "rsqrt": ("{x}.rsqrt()", "pos", lambda lo, hi: (hi**-0.5, lo**-0.5)),
    "tanh": ("{x}.tanh()", None, lambda lo, hi: (math.tanh(lo), math.tanh(hi))),
    "sigmoid": ("{x}.sigmoid()", None, lambda lo, hi: (0.0, 1.0)),
    "relu": ("{x}.relu()", None, lambda lo, hi: (max(lo, 0.0), max(hi, 0.0))),
    "abs": ("{x}.abs()", None, lambda lo, hi: (0.0, max(abs(lo), abs(hi)))),
    "square": ("{x} ** 2", None, lambda lo, hi: (0.0, max(lo * lo, hi * hi))),
    "cube": ("{x}.pow(3)", None, lambda lo, hi: (lo**3, hi**3)),
    "pow_half": ("{x} ** 0.5", "pos", lambda lo, hi: (lo**0.5, hi**0.5)),
    "pow_m1": ("{x} ** -1.0", "pos", lambda lo, hi: (1 / hi, 1 / lo)),
    "pow_1_5": ("{x}.pow(1.5)", "pos", lambda lo, hi: (lo**1.5, hi**1.5)),
    "pow_0": ("{x} ** 0", None, lambda lo, hi: (1.0, 1.0)),
    "rpow": ("2.0 ** {x}", "bound", lambda lo, hi: (2.0**lo, 2.0**hi)),
    "scale": ("{x} * 2.5", None, lambda lo, hi: (2.5 * lo, 2.5 * hi)),
    "shift": ("1.5 - {x}", None, lambda lo, hi: (1.5 - hi, 1.5 - lo)),
    "rdiv": ("2.0 / {x}", "pos", lambda lo, hi: (2.0 / hi, 2.0 / lo)),
    "sdiv": ("{x} / 4.0", None, lambda lo, hi: (lo / 4, hi / 4)),
    "F.relu": ("F.relu({x})", None, lambda lo, hi: (max(lo, 0.0), max(hi, 0.0))),
}


def unary(b: Builder) -> None:
    a = b.pick()
    names = list(UNARY) + ["gelu", "gelu_none"]
    op = b.choice(names)
    if op.startswith("gelu"):
        x, approx = a.name, ("tanh" if op == "gelu" else "none")
        form = b.int(0, 2)
        t_src = f"F.gelu({x}" + (")" if approx == "none" and form == 2 else
                                 f", approximate={approx!r})")
        mt_src = f"{x}.gelu(approximate={approx!r})" if form == 0 else t_src  # no torch method
        b.emit(mt_src, a.shape, -0.2, max(a.hi, 0.0), f"unary:{op}", a.dtype, a.grad,
               torch_expr=t_src)
        return
    expr, needs, fn = UNARY[op]
    if needs == "pos":
        a = b.positive(a)
    elif needs == "bound":
        a = b.bounded(a, 4.0)
    lo, hi = fn(a.lo, a.hi) if math.isfinite(a.mag) else (-math.inf, math.inf)
    b.emit(expr.format(x=a.name), a.shape, min(lo, hi), max(lo, hi), f"unary:{op}", a.dtype,
           a.grad)


def binary(b: Builder) -> None:
    """a op c with broadcasting: c is a, another compatible node, or a new leaf."""
    a = b.pick()
    op = b.choice(["+", "-", "*", "/"])
    how = b.int(0, 2)
    c = a if how == 0 else None
    if how == 1:
        c = b.pick(lambda n: _broadcast(a.shape, n.shape) is not None and n is not a)
    if c is None:
        c = b.leaf(b.bcast_shape(a.shape), domain="pos" if op == "/" else "real")
    if op == "/":
        c = b.positive(c)
    shape = _broadcast(a.shape, c.shape)
    ends = [x(p, q) for p in (a.lo, a.hi) for q in (c.lo, c.hi) for x in
            [{"+": lambda p, q: p + q, "-": lambda p, q: p - q, "*": lambda p, q: p * q,
              "/": lambda p, q: p / q}[op]]] if math.isfinite(a.mag + c.mag) else [-math.inf]
    b.emit(f"{a.name} {op} {c.name}", shape, min(ends), max(ends) if ends[0] != -math.inf
           else math.inf, f"binary:{op}{'' if a.shape == c.shape else ':bcast'}",
           b.partner_dtype(a, c), a.grad or c.grad)


def _broadcast(s, t):
    try:
        return tuple(np.broadcast_shapes(s, t))
    except ValueError:
        return None


def fanout(b: Builder) -> None:
    """One intermediate used >= 3 times: z = x * 1.0 (0-d, zero-size or ordinary), then a sum of
    three or more uses of z, optionally through different ops."""
    kind = b.int(0, 2)
    pred = [lambda n: n.shape == (), lambda n: n.size == 0, lambda n: n.size > 0][kind]
    x = b.pick(pred)
    if x is None:
        x = b.leaf([(), b.choice([(0,), (2, 0)]), b.choice([(3,), (2, 3)])][kind], grad=True)
    x = b.bounded(x, 3.0)
    z = b.emit(f"{x.name} * 1.0", x.shape, x.lo, x.hi, "fanout:copy", x.dtype, x.grad)
    k = b.int(3, 5)
    terms = [b.choice(["{z}", "{z}", "{z} * 2.0", "{z}.tanh()", "{z}.exp()"]) for _ in range(k)]
    expr = " + ".join(t.format(z=z.name) for t in terms)
    b.emit(expr, z.shape, -k * 60.0, k * 60.0, f"fanout:{['0d', 'empty', 'dense'][kind]}",
           z.dtype, z.grad)


def diamond(b: Builder) -> None:
    a = b.bounded(b.pick(), 3.0)
    left = b.emit(f"{a.name}.tanh()", a.shape, -1, 1, "diamond", a.dtype, a.grad)
    right = b.emit(f"{a.name} * 0.5 - 1.0", a.shape, a.lo / 2 - 1, a.hi / 2 - 1, "diamond",
                   a.dtype, a.grad)
    b.emit(f"{left.name} * {right.name}", a.shape, -2.5, 2.5, "diamond", a.dtype, a.grad)


def _dims(b: Builder, nd: int, allow_tuple: bool):
    """None, an int (negative allowed, 0/-1 on 0-d), or a tuple of distinct dims."""
    kind = b.int(0, 2 if allow_tuple and nd >= 2 else 1)
    if kind == 0:
        return None
    if kind == 1:
        return b.int(-max(nd, 1), max(nd, 1) - 1)
    k = b.int(1, nd)
    dims = b.rng.permutation(nd)[:k].tolist()
    return tuple(d - nd if b.coin(30) else d for d in dims)


def _reduced(shape, dim):
    """(number of reduced elements, output shape without keepdim, output shape with keepdim)."""
    nd = len(shape)
    if dim is None:
        axes = set(range(nd))
    else:
        axes = {d % max(nd, 1) for d in ((dim,) if isinstance(dim, int) else dim)}
    if nd == 0:
        return 1, (), ()
    n = int(np.prod([shape[d] for d in axes]))
    return n, tuple(s for i, s in enumerate(shape) if i not in axes), tuple(
        1 if i in axes else s for i, s in enumerate(shape))


def reduce(b: Builder) -> None:
    a = b.pick()
    nd = len(a.shape)
    op = b.choice(["sum", "sum", "mean", "amax", "var", "max_dim", "max_all", "argmax"])
    dim = None if op == "max_all" else _dims(b, nd, op in ("sum", "mean", "amax", "var"))
    if op == "max_dim" and dim is None:
        dim = b.int(-max(nd, 1), max(nd, 1) - 1)
    keep = op != "max_all" and b.coin()
    n, out, outk = _reduced(a.shape, dim)
    shape = outk if keep else (out if dim is not None else ())
    args = ", ".join(([] if dim is None and not keep else [f"dim={dim!r}"])
                     + (["keepdim=True"] if keep else []))
    lo, hi = a.lo, a.hi
    if op == "sum":
        lo, hi = (a.lo * n, a.hi * n) if n else (0.0, 0.0)
    if op == "mean" and n == 0:
        lo, hi = -math.inf, math.inf
    if op == "var":
        corr = b.int(0, 2)
        args = ", ".join([x for x in (args, f"correction={corr}") if x])
        lo = 0.0
        hi = (a.hi - a.lo) ** 2 * n / (n - corr) if n - corr > 0 else math.inf
    if op == "argmax":
        name = b.fresh("i")
        b.stmt(f"{name} = {a.name}.argmax({args})", family="reduce:argmax")
        b.p.lines.append(Line("rec", f"_rec({name!r}, {name})", f"_rec({name!r}, {name})",
                              "reduce:argmax", name))
        _tag(b, "reduce:argmax")
        return
    method = {"max_dim": "max", "max_all": "max"}.get(op, op)
    expr = f"{a.name}.{method}({args})" + (".values" if op == "max_dim" else "")
    tag = f"reduce:{op}:{'0d' if not a.shape else ('empty' if a.size == 0 else 'dense')}"
    b.emit(expr, shape, lo, hi, tag, a.dtype, a.grad)


def softmax(b: Builder) -> None:
    a = b.pick()
    nd = len(a.shape)
    dim = b.int(-max(nd, 1), max(nd, 1) - 1)
    op = b.choice(["softmax", "log_softmax"])
    n = a.shape[dim] if nd else 1
    lo, hi = (0.0, 1.0) if op == "softmax" else (
        -(a.hi - a.lo) - math.log(max(n, 1)), 0.0)
    tag = f"{op}:{'empty' if a.size == 0 else ('0d' if not nd else 'dense')}"
    expr = f"{a.name}.{op}({dim})" if b.coin() else f"F.{op}({a.name}, dim={dim})"
    b.emit(expr, a.shape, lo, hi, tag, a.dtype, a.grad)


def _factor(b: Builder, n: int, shape: tuple) -> tuple:
    """A random shape with n elements (with -1 at times)."""
    if n == 0:
        k = b.int(1, 3)
        dims = [b.int(1, 3) for _ in range(k)]
        dims[b.int(0, k - 1)] = 0
        return tuple(dims) if b.coin(80) else (-1,)
    dims, rest = [], n
    for _ in range(b.int(0, 3)):
        divs = [d for d in range(1, rest + 1) if rest % d == 0]
        d = b.choice(divs)
        dims.append(d)
        rest //= d
    if rest != 1 or not dims:
        dims.append(rest)
    if b.coin(30):
        dims[b.int(0, len(dims) - 1)] = -1
    if dims == [1] and n == 1 and b.coin():
        return ()
    return tuple(dims)


def _resolve(n: int, shape: tuple) -> tuple:
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1]))
        return tuple(n // known if s == -1 else s for s in shape)
    return shape


def view(b: Builder) -> None:
    """A chain of 1-3 view/indexing ops."""
    a = b.pick()
    for _ in range(b.int(1, 3)):
        a = _view_step(b, a)


def _view_step(b: Builder, a: Node) -> Node:
    nd, s = len(a.shape), a.shape
    ops = ["reshape", "transpose", "swapaxes", "permute", "unsqueeze", "squeeze", "flatten",
           "index", "advanced"] + (["mT"] if nd >= 2 else []) + (["T"] if nd == 2 else []) + [
        "expand", "clone"]
    op = b.choice(ops)
    x = a.name
    if op == "reshape":
        new = _factor(b, a.size, s)
        expr, shape = f"{x}.reshape({new!r})", _resolve(a.size, new)
    elif op in ("transpose", "swapaxes"):
        d0, d1 = b.int(-max(nd, 1), max(nd, 1) - 1), b.int(-max(nd, 1), max(nd, 1) - 1)
        shape = list(s)
        if nd:
            shape[d0], shape[d1] = shape[d1], shape[d0]
        expr, shape = f"{x}.{op}({d0}, {d1})", tuple(shape)
    elif op == "permute":
        perm = b.rng.permutation(nd).tolist()
        expr, shape = f"{x}.permute({tuple(perm)!r})", tuple(s[p] for p in perm)
    elif op == "unsqueeze":
        d = b.int(-nd - 1, nd)
        pos = d % (nd + 1)
        expr, shape = f"{x}.unsqueeze({d})", s[:pos] + (1,) + s[pos:]
    elif op == "squeeze":
        d = b.int(-max(nd, 1), max(nd, 1) - 1)
        shape = s if not nd or s[d] != 1 else s[: d % nd] + s[d % nd + 1:]
        expr = f"{x}.squeeze({d})"
    elif op == "flatten":
        expr, shape = f"{x}.flatten()", (a.size,)
    elif op == "mT":
        expr, shape = f"{x}.mT", s[:-2] + (s[-1], s[-2])
    elif op == "T":
        expr, shape = f"{x}.T", s[::-1]
    elif op == "expand":
        expr, shape = _expand(b, a)
        if b.coin(30) and "expand_as" not in b.skip:  # the same through expand_as(other)
            other = b.const(np.zeros(shape), "k")
            expr, op = f"{x}.expand_as({other})", "expand_as"
    elif op == "clone":
        expr, shape = f"{x}.clone()", s
    elif op == "index":
        expr, shape = _basic_index(b, a)
    else:
        expr, shape = _advanced_index(b, a)
    return b.emit(expr, shape, a.lo, a.hi, f"view:{op}", a.dtype, a.grad)


def _expand(b: Builder, a: Node):
    lead = tuple(b.int(1, 3) for _ in range(b.int(0 if a.shape else 1, 2)))
    body = tuple(b.int(1, 3) if d == 1 else d for d in a.shape)
    spec = lead + tuple(-1 if d == old and b.coin(30) else d for d, old in zip(body, a.shape))
    return f"{a.name}.expand({spec!r})", lead + body


def _basic_index(b: Builder, a: Node):
    """ints (negative too), slices with steps, None and Ellipsis."""
    parts: list[tuple[str, tuple]] = []  # (source, output dims it makes)
    dims = list(a.shape)
    take = b.int(0, len(dims))
    for d in dims[:take]:
        k = b.int(0, 2)
        if k == 0 and d > 0:
            parts.append((str(b.int(-d, d - 1)), ()))
        elif k == 1:
            parts.append((":", (d,)))
        else:
            start, stop, step = b.int(0, d), b.int(0, d + 1), b.int(1, 2)
            parts.append((f"{start}:{stop}:{step}", (len(range(start, min(stop, d), step)),)))
    if b.coin(25):
        parts.insert(b.int(0, len(parts)), ("None", (1,)))
    if b.coin(20) or not parts:
        parts.append(("...", tuple(dims[take:])))
        rest = ()
    else:
        rest = tuple(dims[take:])
    shape = tuple(d for _, out in parts for d in out) + rest
    return f"{a.name}[{', '.join(src for src, _ in parts)}]", shape


def _advanced_index(b: Builder, a: Node):
    s, x = a.shape, a.name
    if not s or s[0] == 0:
        return f"{x}[...]", s
    if not s or a.size == 0 and b.coin():
        return f"{x}[None]", (1,) + s
    kind = b.int(0, 4)
    idx = lambda d, k: [int(v) for v in b.rng.integers(-d, d, k)]  # noqa: E731 (repeats on purpose)
    if kind == 1 and len(s) >= 2 and s[1] > 0:
        i = idx(s[1], b.int(1, 4))
        return f"{x}[:, {i!r}]", (s[0], len(i)) + s[2:]
    if kind == 2 and len(s) >= 3 and s[2] > 0:  # torch: the int is a basic index, so the
        i = idx(s[2], b.int(1, 3))  # list's dim stays in place (NumPy would move it first)
        return f"{x}[0, :, {i!r}]", (s[1], len(i)) + s[3:]
    if kind == 3 and len(s) >= 2 and s[1] > 0:
        k = b.int(1, 3)
        i, j = idx(s[0], k), idx(s[1], k)
        return f"{x}[{i!r}, {j!r}]", (k,) + s[2:]
    if kind == 4:
        mask = b.rng.random(s) < 0.5
        name = b.const(mask, "m")
        return f"{x}[{name}]", (int(mask.sum()),)
    i = idx(s[0], b.int(1, 4))
    return f"{x}[{i!r}]", (len(i),) + s[1:]


def matmul(b: Builder) -> None:
    kind = b.int(0, 4)
    a = b.pick(lambda n: len(n.shape) >= 1 and n.size <= 64)
    if a is None or kind == 0:  # fresh operands, inner dim possibly 0
        m, k, n = b.int(0, 3), b.int(0, 3), b.int(0, 3)
        batch = b.choice([(), (), (2,), (1,)])
        a = b.leaf(batch + (m, k))
        dt = a.dtype
        c = b.leaf(b.choice([(), batch]) + (k, n), dtype=dt)
    else:
        a = b.bounded(a, 5.0)
        k = a.shape[-1]
        if len(a.shape) == 1 or b.coin(25):
            cshape = (k,) if b.coin() else (k, b.int(0, 3))
            if len(a.shape) == 1 and b.coin(25):
                cshape = (2, k, b.int(1, 3))
        else:
            cshape = b.choice([(k, b.int(0, 3)), a.shape[:-2] + (k, b.int(0, 3)),
                               (1,) + (k, b.int(1, 2))])
        c = b.leaf(cshape, dtype=a.dtype)
    out = _mm_shape(a.shape, c.shape)
    if out is None:
        return
    k = a.shape[-1]
    m = max(a.mag, 1.0) * max(c.mag, 1.0) * max(k, 1)
    tag = "matmul:" + ("k0" if k == 0 else ("1d" if min(len(a.shape), len(c.shape)) == 1
                                            else "2d+"))
    op = b.choice(["{a} @ {c}", "{a}.matmul({c})"])
    b.emit(op.format(a=a.name, c=c.name), out, -m, m, tag, a.dtype, a.grad or c.grad)


def _mm_shape(s, t):
    if len(s) == 1 and len(t) == 1:
        return () if s == t else None
    if len(s) == 1:
        r = _mm_shape((1,) + s, t)
        return None if r is None else r[:-2] + r[-1:]
    if len(t) == 1:
        r = _mm_shape(s, t + (1,))
        return None if r is None else r[:-1]
    if s[-1] != t[-2]:
        return None
    batch = _broadcast(s[:-2], t[:-2])
    return None if batch is None else batch + (s[-2], t[-1])


def join(b: Builder) -> None:
    """cat / stack of a node with itself and a same-shaped partner."""
    a = b.pick(lambda n: len(n.shape) >= 1)
    if a is None:
        a = b.leaf((2, 3))
    op = b.choice(["cat", "stack"])
    nd = len(a.shape)
    if op == "cat":
        dim = b.int(-nd, nd - 1)
        d = dim % nd
        pshape = a.shape[:d] + (b.int(0, 2),) + a.shape[d + 1:]
        c = b.pick(lambda n: n.shape == pshape) or b.leaf(pshape)
        shape = a.shape[:d] + (2 * a.shape[d] + c.shape[d],) + a.shape[d + 1:]
    else:
        dim = b.int(-nd - 1, nd)
        c = b.pick(lambda n: n.shape == a.shape) or b.leaf(a.shape)
        d = dim % (nd + 1)
        shape = a.shape[:d] + (3,) + a.shape[d:]
    lo, hi = min(a.lo, c.lo), max(a.hi, c.hi)
    b.emit(f"lib.{op}([{a.name}, {c.name}, {a.name}], dim={dim})", shape, lo, hi, f"join:{op}",
           b.partner_dtype(a, c), a.grad or c.grad)


def select(b: Builder) -> None:
    """where / masked_fill with a comparison mask (and the comparison itself recorded)."""
    a = b.pick()
    c = b.pick(lambda n: _broadcast(a.shape, n.shape) is not None) or a
    shape = _broadcast(a.shape, c.shape)
    lo, hi = min(a.lo, c.lo), max(a.hi, c.hi)
    if b.coin():
        cmp = b.choice([">", "<=", ".eq", ".ne", ">="])
        cond = f"{a.name}{cmp}({c.name})" if cmp[0] == "." else f"{a.name} {cmp} {c.name}"
        name = b.fresh("m")
        b.stmt(f"{name} = {cond}", family="select:compare")
        b.p.lines.append(Line("rec", f"_rec({name!r}, {name})", f"_rec({name!r}, {name})",
                              "select:compare", name, shape, "bool"))
        b.emit(f"lib.where({name}, {a.name}, {c.name})", shape, lo, hi,
               "select:where", b.partner_dtype(a, c), a.grad or c.grad)
    else:
        b.emit(f"{a.name}.masked_fill({c.name} < 0.1, 0.75)", shape, min(a.lo, 0.75),
               max(a.hi, 0.75), "select:masked_fill", a.dtype, a.grad)


def nn(b: Builder) -> None:
    op = b.choice(["linear", "layer_norm", "rms_norm", "cross_entropy", "embedding", "sdpa"])
    a = b.pick(lambda n: len(n.shape) >= 1)
    if a is None:
        a = b.leaf((2, 3))
    a = b.bounded(a, 5.0)
    C, dt = a.shape[-1], a.dtype
    if op == "linear":
        out = b.int(0, 3)
        w = b.leaf((out, C), dtype=dt)
        bias = b.leaf((out,), dtype=dt).name if b.coin() else "None"
        m = max(a.mag, 1) * 2 * max(C, 1) + 2
        b.emit(f"F.linear({a.name}, {w.name}, {bias})", a.shape[:-1] + (out,), -m, m,
               "nn:linear", dt, True)
    elif op in ("layer_norm", "rms_norm"):
        w = b.leaf((C,), dtype=dt).name if b.coin(70) else "None"
        m = 2 * math.sqrt(max(C, 1)) + 2
        if op == "layer_norm":
            bias = b.leaf((C,), dtype=dt).name if b.coin(70) else "None"
            mt_src = f"F.layer_norm({a.name}, {w}, {bias}, eps=1e-5)"
            t_src = f"F.layer_norm({a.name}, ({C},), {w}, {bias}, eps=1e-5)"
        else:
            mt_src = f"F.rms_norm({a.name}, {w}, eps=1e-5)"
            t_src = f"F.rms_norm({a.name}, ({C},), {w}, eps=1e-5)"
        mt_src = t_src  # torch's signature, (x, normalized_shape, ...)
        b.emit(mt_src, a.shape, -m, m, f"nn:{op}{':empty' if C == 0 else ''}", dt, True,
               torch_expr=t_src)
    elif op == "cross_entropy":
        _cross_entropy(b)
    elif op == "embedding":
        V = b.int(1, 4)
        w = b.pick(lambda n: len(n.shape) == 2 and n.shape[0] > 0) or b.leaf((V, 3))
        V = w.shape[0]
        ids = b.rng.integers(0, V, b.choice([(), (3,), (2, 2), (0,)]))
        name = b.const(ids, "t")
        b.emit(f"F.embedding({name}, {w.name})", ids.shape + w.shape[1:], w.lo, w.hi,
               "nn:embedding", w.dtype, w.grad)
    else:
        q = b.pick(lambda n: len(n.shape) >= 2 and n.shape[-1] > 0 and n.shape[-2] > 0) \
            or b.leaf((2, 3, 2))
        tk = q.shape[-2] if b.coin(60) else b.int(1, 4)
        hv = q.shape[-1] if b.coin(70) else b.int(1, 3)
        k = b.leaf(q.shape[:-2] + (tk, q.shape[-1]), dtype=q.dtype)
        v = b.leaf(q.shape[:-2] + (tk, hv), dtype=q.dtype)
        causal = b.choice([", is_causal=True", ", is_causal=False", ""])
        if b.coin(40):
            tq = q.shape[-2]
            if b.coin():
                mask = b.const(b.rng.random((tq, tk)) < 0.7, "m")  # True: may attend
            else:
                mask = b.leaf((tq, tk), dtype=q.dtype, grad=False).name  # additive
            causal = f", attn_mask={mask}" + (", scale=0.5" if b.coin() else "")
        b.emit(f"F.scaled_dot_product_attention({q.name}, {k.name}, {v.name}{causal})",
               q.shape[:-1] + (hv,), -2.0, 2.0,
               f"nn:sdpa:{'Tq=Tk' if tk == q.shape[-2] else 'Tq!=Tk'}:"
               f"{causal[2:].split('=')[0] or 'default'}",
               q.dtype, q.grad or k.grad or v.grad)


def _cross_entropy(b: Builder) -> None:
    """torch's layout: logits (N, C), (N, C, d) or (C,); class ids (N,), (N, d) or ();
    probability targets shaped like the logits."""
    nd = b.choice([2, 2, 3, 1])
    z = b.pick(lambda n: len(n.shape) == nd and n.shape[min(1, nd - 1)] > 0)
    if z is None:
        z = b.leaf([(b.int(1, 4),), (b.int(0, 3), b.int(1, 4)),
                    (b.int(0, 2), b.int(1, 3), b.int(0, 2))][nd - 1])
    z = b.bounded(z, 5.0)
    V = z.shape[min(1, nd - 1)]
    tshape = z.shape[:1] + z.shape[2:] if nd > 1 else ()
    kw, tag = [], f"nn:cross_entropy:{nd}d"
    probs = b.coin(25)
    if probs:
        t = b.leaf(z.shape, dtype=z.dtype, domain="pos")
        target, tag = t.name, tag + ":probs"
    else:
        ids = b.rng.integers(0, V, tshape)
        if b.coin(30):
            ign = b.choice([-100, 0])
            ids[b.rng.random(tshape) < 0.4] = ign
            kw.append(f"ignore_index={ign}")
        target = b.const(ids, "t")
    if b.coin(40):
        kw.append(f"reduction={b.choice(['mean', 'sum', 'none'])!r}")
    if b.coin(30):
        kw.append(f"label_smoothing={b.choice([0.1, 0.25])}")
    red = next((k.split("=")[1].strip("'") for k in kw if k.startswith("reduction")), "mean")
    shape = tshape if red == "none" else ()
    m = (10.0 + math.log(max(V, 1))) * (max(int(np.prod(tshape)), 1) if red == "sum" else 1)
    extra = "".join(", " + k for k in kw)
    tag += "".join(":" + k.split("=")[0] for k in kw)
    b.emit(f"F.cross_entropy({z.name}, {target}{extra})", shape, -m, m, tag, z.dtype, True)


def cast(b: Builder) -> None:
    a = b.pick()
    op = b.choice([".double()", ".float()", ".to(lib.float64)"] if b.mixed else [".double()"])
    dt = "float32" if op == ".float()" else "float64"
    if dt == "float32":
        b.p.float32 = True
    b.emit(f"{a.name}{op}", a.shape, a.lo, a.hi, f"cast:{dt}", dt, a.grad)


def detach(b: Builder) -> None:
    a = b.pick()
    if b.coin():
        b.emit(f"{a.name}.detach()", a.shape, a.lo, a.hi, "detach", a.dtype, False)
    else:  # a new leaf cut from the graph: its own .grad is compared too
        n = b.emit(f"{a.name}.detach().requires_grad_()", a.shape, a.lo, a.hi, "detach:leaf",
                   a.dtype, True)
        if not b.no_grad:
            b.grad_leaves.append(n.name)


def pow_tensor(b: Builder) -> None:
    """x ** y with a tensor exponent: positive bases, or any base with integer exponents."""
    a = b.pick()
    if b.coin(70):
        base = b.positive(a)
        e = b.pick(lambda n: _broadcast(base.shape, n.shape) is not None and n.mag <= 3) or \
            b.leaf(b.bcast_shape(base.shape))
        e = b.bounded(e, 3.0)
        tag = "pow_tensor:pos"
    else:
        base = b.bounded(a, 3.0)
        e = b.leaf(b.bcast_shape(base.shape), domain="ints")
        tag = "pow_tensor:anybase"
    shape = _broadcast(base.shape, e.shape)
    m = max(base.mag, 1 / max(base.lo, 1e-3) if base.lo > 0 else 1e3, 1.0) ** 3
    b.emit(f"{base.name} ** {e.name}", shape, -m, m, tag, b.partner_dtype(base, e),
           base.grad or e.grad)


def inplace(b: Builder) -> None:
    """An in-place update of a fresh copy z = a * 1.0: z op= c, add_(c, alpha=), mul_,
    clamp_, or z[..., 0] = c, with c a node that broadcasts to z's shape (a 0-d one for the
    write) or a number; z is then used on under a new name (its old bounds no longer hold)."""
    a = b.bounded(b.pick(), 3.0)
    z = b.emit(f"{a.name} * 1.0", a.shape, a.lo, a.hi, "inplace:copy", a.dtype, a.grad)
    kind = b.choice(["+=", "-=", "*=", "add_", "mul_", "clamp_", "setitem"])
    if kind == "setitem" and not (z.shape and z.shape[-1] > 0):
        kind = "+="
    fits = (lambda n: n.shape == ()) if kind == "setitem" else (
        lambda n: n is not z and _broadcast(z.shape, n.shape) == z.shape)
    c = b.pick(fits) if b.coin(60) else None
    if c is None:
        c = b.leaf(() if kind == "setitem" or b.coin(30) else z.shape)
    c = b.bounded(c, 3.0)
    ends = {"+=": (z.lo + c.lo, z.hi + c.hi), "-=": (z.lo - c.hi, z.hi - c.lo),
            "add_": (z.lo + 0.5 * c.lo, z.hi + 0.5 * c.hi), "mul_": (2.0 * z.lo, 2.0 * z.hi),
            "clamp_": (max(z.lo, -0.75), min(z.hi, 0.75)),
            "setitem": (min(z.lo, c.lo), max(z.hi, c.hi))}.get(kind)
    if kind == "*=":
        prods = [p * q for p in (z.lo, z.hi) for q in (c.lo, c.hi)]
        ends = (min(prods), max(prods))
    src = {"add_": f"{z.name}.add_({c.name}, alpha=0.5)", "mul_": f"{z.name}.mul_(2.0)",
           "clamp_": f"{z.name}.clamp_(-0.75, 0.75)",
           "setitem": f"{z.name}[..., 0] = {c.name}"}.get(kind, f"{z.name} {kind} {c.name}")
    b.stmt(src, family=f"inplace:{kind}")
    b.nodes.remove(z)
    grad = z.grad or (c.grad and kind not in ("mul_", "clamp_"))
    b.emit(z.name, z.shape, min(ends), max(ends), f"inplace:{kind}", z.dtype, grad)


FAMILIES = [unary, unary, binary, binary, fanout, diamond, reduce, reduce, softmax, view, view,
            matmul, join, select, nn, cast, detach, pow_tensor,
            inplace]


def finish(b: Builder) -> None:
    """Loss = sum of <cotangent, output> over 1-3 outputs, then one of the backward modes."""
    outs = [n for n in b.nodes if n.grad]
    if not outs:
        outs = [b.nodes[0]]
    chosen = [outs[-1 - b.int(0, len(outs) - 1)] for _ in range(b.int(1, 3))]
    mode = b.choice(["single", "single", "retain_twice", "accumulate", "explicit", "zero",
                     "freed"])

    def loss_of(nodes, plain=False):
        terms = []
        for o in nodes:
            if plain:  # no cotangent: the loss itself saves no tensor for backward
                terms.append(f"{o.name}.sum()")
                continue
            c = b.leaf(o.shape, dtype=o.dtype, grad=False, keep=False)
            terms.append(f"({o.name} * {c.name}).sum()")
        dt = "float64" if any(o.dtype == "float64" for o in nodes) else "float32"
        return b.emit(" + ".join(terms), (), -1e9, 1e9, "loss", dt, True)

    def grads(tag):
        for name in b.grad_leaves:
            b.p.lines.append(Line("recg", f"_recg({name!r}, {name})",
                                  f"_recg({name!r}, {name})", tag, name))

    _tag(b, f"backward:{mode}")
    if mode == "explicit":
        o = chosen[0]
        c = b.leaf(o.shape, dtype=o.dtype, grad=False, keep=False)
        b.stmt(f"{o.name}.backward({c.name})", family="backward:explicit")
        grads("backward:explicit")
        return
    loss = loss_of(chosen, plain=mode == "freed")
    if mode == "freed":  # a second backward without retain_graph: torch raises only if a node
        b.stmt(f"{loss.name}.backward()", family="backward:freed")  # needs freed saved tensors
        grads("backward:freed:first")
        b.stmt(f"{loss.name}.backward()", family="backward:freed")
        grads("backward:freed:second")
        return
    if mode == "single":
        b.stmt(f"{loss.name}.backward()", family="backward:single")
        grads("backward:single")
        return
    b.stmt(f"{loss.name}.backward(retain_graph=True)", family=f"backward:{mode}")
    grads(f"backward:{mode}:first")
    if mode == "zero" and b.grad_leaves:
        b.stmt(f"{b.choice(b.grad_leaves)}.grad = None", family="backward:zero")
    if mode == "accumulate":
        loss = loss_of([outs[-1 - b.int(0, len(outs) - 1)]])
    b.stmt(f"{loss.name}.backward()", family=f"backward:{mode}")
    grads(f"backward:{mode}:second")


@st.composite
def programs(draw, skip: frozenset = frozenset()):
    """A random Program (see the module docstring)."""
    return Builder(draw, skip).build()


# ---- running and comparing -----------------------------------------------------------------------
@dataclass
class Rec:
    label: str
    kind: str  # 'rec' | 'recg'
    shape: tuple | None = None
    dtype: str | None = None
    requires_grad: bool | None = None
    values: np.ndarray | None = None  # None for a missing grad


@dataclass
class Outcome:
    records: list[Rec]
    error: tuple[int, str] | None = None  # (index into Program.lines, "Type: message")


def _torch():
    import torch

    torch.set_num_threads(1)
    return torch


def _to_numpy(t, lib: str) -> np.ndarray:
    """A copy: a record must not hold the tensor's memory (minitorch refuses an in-place op
    joining the graph on memory something else holds)."""
    if lib == "mt":
        return np.array(t.data, copy=True)
    return t.detach().cpu().numpy().copy()


def _dtype_name(t) -> str:
    return str(t.dtype).replace("torch.", "")


def run(program: Program, lib: str) -> Outcome:
    """Execute the program with lib ('mt' or 'torch'), recording every node and grad."""
    records: list[Rec] = []

    def rec(label, t):
        records.append(Rec(label, "rec", tuple(t.shape), _dtype_name(t), bool(t.requires_grad),
                           _to_numpy(t, lib)))

    def recg(label, t):
        g = t.grad
        if g is None:
            records.append(Rec(label, "recg"))
        else:
            records.append(Rec(label, "recg", tuple(g.shape), _dtype_name(g), None,
                               np.array(_to_numpy(g, lib), copy=True)))

    if lib == "mt":
        ns = {"lib": mt, "F": mtF}
    else:
        torch = _torch()
        ns = {"lib": torch, "F": torch.nn.functional}
    ns.update(np=np, _L=program.leaves, _rec=rec, _recg=recg)
    code = compile(program.source(lib), "<program>", "exec")
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            exec(code, ns)
    except Exception as e:  # the program's error is data: the other library must raise too
        lineno = next((n for f, n in traceback.walk_tb(e.__traceback__)
                       if f.f_code.co_filename == "<program>"), 0)
        return Outcome(records, (program.line_of(lineno, lib), f"{type(e).__name__}: {e}"))
    return Outcome(records)


# The documented deliberate differences (README "Where minitorch differs from PyTorch", each
# tested in verification/test_torch_semantics.py::test_difference_*): an error in one library
# only that matches one of these is counted under its name, not reported. Nothing else is
# allowed. Each gets (statement source, minitorch error or None, torch error or None).
DELIBERATE = {
    # minitorch frees every node during backward; torch only its saved tensors
    "second_backward_needs_retain_graph": lambda src, mt_err, t_err: (
        t_err is None and mt_err is not None and ".backward(" in src
        and "already freed" in mt_err),
    # float32 @ float64 (matmul, linear, norms) promotes in minitorch; torch raises
    "mixed_float_dtypes_promote": lambda src, mt_err, t_err: (
        mt_err is None and t_err is not None
        and ("same dtype" in t_err or "expected scalar type" in t_err)),
}


@dataclass
class Mismatch:
    kind: str  # error|shape|dtype|requires_grad|grad_none|nonfinite|value|generator (self-check)
    label: str  # "rec:<node>" or "recg:<leaf>" ("" for an error)
    line: int  # index into Program.lines where it shows
    detail: str
    family: str = ""

    @property
    def signature(self) -> str:
        return f"{self.kind} @ {self.family}"


def compare(program: Program, a: Outcome, b: Outcome) -> tuple[Mismatch | None, float]:
    """The first disagreement between minitorch (a) and torch (b), and the worst error/tol
    ratio among the values that agreed."""
    worst = 0.0
    rec_lines = [i for i, ln in enumerate(program.lines) if ln.kind != "stmt"]
    for i, (x, y) in enumerate(zip(a.records, b.records)):
        kind, detail, ratio = _compare_rec(x, y, program.rtol)
        want = program.lines[rec_lines[i]]
        if kind is None and want.shape is not None and (y.shape, y.dtype) != (want.shape,
                                                                             want.dtype):
            kind, detail = "generator", (
                f"the fuzzer expected {want.shape} {want.dtype}, torch made {y.shape} {y.dtype}"
                " (a bug in program_fuzz, not the engine)")
        if kind is not None:
            line = rec_lines[i]
            what = x.label if x.kind == "rec" else f"{x.label}.grad"
            return Mismatch(kind, f"{x.kind}:{x.label}", line, f"{what}: {detail}",
                            program.lines[line].family), worst
        worst = max(worst, ratio)
    n = min(len(a.records), len(b.records))
    if a.error or b.error:
        if a.error and b.error and a.error[0] == b.error[0]:
            program.refused = program.lines[a.error[0]].family  # both refuse the same statement
            return None, worst
        line = min(e[0] for e in (a.error, b.error) if e)
        errs = [e[1] if e and e[0] == line else None for e in (a.error, b.error)]
        allowed = [name for name, rule in DELIBERATE.items()
                   if rule(program.lines[line].mt, *errs)]
        if allowed:
            program.deliberate = allowed[0]
            return None, worst
        detail = (f"minitorch raised {a.error[1]!r}" if a.error else "minitorch did not raise") \
            + "; " + (f"torch raised {b.error[1]!r}" if b.error else "torch did not raise")
        return Mismatch("error", "", line, detail, program.lines[line].family), worst
    if len(a.records) != len(b.records):
        return Mismatch("error", "", rec_lines[n], "record count differs"), worst
    return None, worst


def _compare_rec(x: Rec, y: Rec, rtol: float) -> tuple[str | None, str, float]:
    """(mismatch kind or None, detail, error/tol) for one record of each library."""
    if (x.values is None) != (y.values is None):
        return "grad_none", (f"minitorch {'None' if x.values is None else 'set'}, "
                             f"torch {'None' if y.values is None else 'set'}"), 0.0
    if x.values is None:
        return None, "", 0.0
    for attr in ("shape", "dtype", "requires_grad"):
        if getattr(x, attr) != getattr(y, attr):
            return attr, f"minitorch {getattr(x, attr)}, torch {getattr(y, attr)}", 0.0
    ok, ratio, detail = _close(x.values, y.values, rtol)
    if not ok:
        return ("nonfinite" if ratio == math.inf else "value"), detail, ratio
    return None, "", ratio


def _close(x: np.ndarray, y: np.ndarray, rtol: float) -> tuple[bool, float, str]:
    """Equal nan/inf pattern, and |x - y| <= rtol*|y| + rtol*max(1, max|y|) elsewhere."""
    if x.dtype.kind not in "fc" or y.dtype.kind not in "fc":
        same = np.array_equal(x, y)
        return same, 0.0, "" if same else f"minitorch {x.tolist()}, torch {y.tolist()}"
    x, y = x.astype(np.float64), y.astype(np.float64)
    fx, fy = np.isfinite(x), np.isfinite(y)
    if not np.array_equal(fx, fy) or not np.array_equal(x[~fx], y[~fy], equal_nan=True):
        return False, math.inf, f"nan/inf differ: minitorch {_short(x)}, torch {_short(y)}"
    if not fx.any():
        return True, 0.0, ""
    scale = max(1.0, float(np.abs(y[fy]).max()))
    err = np.abs(x[fx] - y[fy])
    tol = rtol * np.abs(y[fy]) + rtol * scale
    ratio = float((err / tol).max())
    if ratio <= 1.0:
        return True, ratio, ""
    k = int(np.argmax(err / tol))
    return False, ratio, (f"max error {err[k]:.3g} (tol {tol[k]:.3g}); minitorch {_short(x)}, "
                          f"torch {_short(y)}")


def _short(a: np.ndarray) -> str:
    return np.array2string(a, precision=6, threshold=12, separator=", ").replace("\n", "")


@dataclass
class Result:
    mismatch: Mismatch | None
    worst: float
    program: Program

    def report(self) -> str:
        m = self.mismatch
        if m is None:
            return "ok"
        return (f"{m.kind} mismatch in {m.family or 'program'}: {m.detail}\n"
                f"minimal reproducer (run each; the last line differs):\n\n"
                + self.program.reproducer(m.line, m.label or "-"))


def check(program: Program) -> Result:
    """Run in both libraries and compare."""
    m, worst = compare(program, run(program, "mt"), run(program, "torch"))
    return Result(m, worst, program)


_NAME = re.compile(r"\b[xvtmi]\d+\b")


def sliced(res: Result) -> Result:
    """The failing program cut to the statements the failing line depends on (a backward
    slice; backward calls and `.grad = None` are kept with their inputs), if it still fails
    the same way; else the program as it was."""
    p, m = res.program, res.mismatch
    keep, need = [], set(_NAME.findall(p.lines[m.line].mt))
    for i in range(m.line - 1, -1, -1):
        ln = p.lines[i]
        if ln.kind != "stmt":
            continue
        body = ln.mt.split("\n")[-1].strip()
        target = body.split(" = ")[0] if " = " in body else ""
        effect = ".backward(" in body or body.endswith(".grad = None")
        if effect or target in need:
            keep.append(i)
            need |= set(_NAME.findall(ln.mt))
    keep = sorted(keep) + [m.line]
    small = Program({k: a for k, a in p.leaves.items() if k in need}, [p.lines[i] for i in keep],
                    p.families, p.float32)
    again = check(small)
    if again.mismatch is not None and again.mismatch.kind == m.kind:
        return again
    return res


# ---- the profiles --------------------------------------------------------------------------------
@dataclass
class Stats:
    programs: int = 0
    executions: int = 0
    families: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)  # both raised, by family of the statement
    deliberate: Counter = field(default_factory=Counter)  # DELIBERATE differences met, by name
    failures: dict = field(default_factory=dict)  # signature -> {count, reproducer, detail}
    worst: list = field(default_factory=list)  # (error/tol, rtol, reproducer) when > 0.01
    max_ratio: dict = field(default_factory=dict)  # largest error/tol: float64 / mixed programs
    cpu: float = 0.0  # CPU seconds spent in fuzz() (summed over workers)

    def summary(self) -> dict:
        self.worst.sort(key=lambda w: -w[0])
        return {
            "programs": self.programs, "executions": self.executions,
            "families": dict(sorted(self.families.items())),
            "both_raised": dict(sorted(self.refused.items())),
            "deliberate_differences": dict(sorted(self.deliberate.items())),
            "failures": [{"signature": k, **v} for k, v in sorted(self.failures.items())],
            "max_error_over_tol": self.max_ratio,
            "worst_passing": [{"error_over_tol": r, "rtol": t, "program": p}
                              for r, t, p in self.worst[:10]],
        }


@dataclass(frozen=True)
class Options:
    """How a fuzz run treats what it finds."""

    skip: frozenset = frozenset()  # families (or 'mixed', 'no_grad') left out: exploration only
    shrink: bool = True  # shrink each new failure with hypothesis (else report it as drawn)
    only: frozenset = frozenset()  # if set, mismatch kinds outside it count as agreement
    max_failures: int | None = None  # stop after this many distinct failures
    findings: str | None = None  # markdown file each new failure is appended to


def fuzz(n_programs: int, seed0: int = 0, chunk: int = 1000, opts: Options = Options(),
         log=print, known: frozenset = frozenset()) -> Stats:
    """Run at least n_programs generated programs, in chunks of `chunk` hypothesis examples with
    seeds seed0, seed0+1, ...; each new failure signature is shrunk once and appended to
    `opts.findings`; known signatures (and those in `known`) are counted, not re-shrunk."""
    stats, cpu0 = Stats(), time.process_time()
    for sig in known:
        stats.failures[sig] = {"count": 0}
    i = 0
    while stats.programs < n_programs:
        res = _chunk(stats, min(chunk, n_programs - stats.programs), seed0 + i, opts)
        if res is not None:
            res = sliced(res)
            sig = res.mismatch.signature
            stats.failures[sig] = {"count": 1, "detail": res.mismatch.detail,
                                   "reproducer": res.report()}
            log(f"NEW FAILURE {sig}\n{res.report()}\n")
            if opts.findings:
                with open(opts.findings, "a") as f:
                    f.write(f"\n## {sig} (program_fuzz, seed {seed0 + i})\n\n```\n"
                            f"{res.report()}\n```\n")
        i += 1
        if opts.max_failures is not None and len(stats.failures) >= opts.max_failures:
            break
        log(f"{stats.programs} programs, {stats.executions} executions, "
            f"{len(stats.failures)} distinct failures")
    stats.cpu = time.process_time() - cpu0
    return stats


def _chunk(stats: Stats, n: int, seed_: int, opts: Options) -> Result | None:
    """Up to n generated programs with one hypothesis seed; the first failure whose signature
    is new is shrunk (known ones count as passes) and returned in its minimal form."""
    state = {"shrinking": False, "last": None}

    @settings(max_examples=n, deadline=None, database=None, derandomize=False,
              report_multiple_bugs=False, suppress_health_check=list(HealthCheck),
              phases=[Phase.generate, Phase.shrink] if opts.shrink else [Phase.generate])
    @seed(seed_)
    @given(programs(skip=opts.skip))
    def one(program):
        res = check(program)
        stats.executions += 1
        generated = not state["shrinking"]
        if generated:
            stats.programs += 1
            stats.families.update(program.families)
            if program.refused:
                stats.refused[program.refused] += 1
            if program.deliberate:
                stats.deliberate[program.deliberate] += 1
        m = res.mismatch
        if m is not None and opts.only and m.kind not in opts.only:
            m = None
        if m is None:
            kind = "mixed" if program.float32 else "float64"
            stats.max_ratio[kind] = max(stats.max_ratio.get(kind, 0.0), res.worst)
            if generated and res.worst > 0.01:
                stats.worst.append((res.worst, program.rtol, program.reproducer()))
                stats.worst = sorted(stats.worst, key=lambda w: -w[0])[:10]
            return
        known = stats.failures.get(m.signature)
        if known is not None:  # counted once when generated; a pass while shrinking a new one
            known["count"] += generated
            return
        state["shrinking"], state["last"] = True, res
        raise AssertionError(m.signature)

    try:
        one()
    except AssertionError:
        pass
    return state["last"]


def merge(parts: list[Stats]) -> Stats:
    """One Stats from several workers' (failures by signature: counts added, first kept)."""
    out = Stats()
    for st_ in parts:
        out.programs += st_.programs
        out.executions += st_.executions
        out.cpu += st_.cpu
        out.families.update(st_.families)
        out.refused.update(st_.refused)
        out.deliberate.update(st_.deliberate)
        for sig, f in st_.failures.items():
            if sig in out.failures:
                out.failures[sig]["count"] += f["count"]
            else:
                out.failures[sig] = dict(f)
        out.worst = sorted(out.worst + st_.worst, key=lambda w: -w[0])[:10]
        for k, v in st_.max_ratio.items():
            out.max_ratio[k] = max(out.max_ratio.get(k, 0.0), v)
    return out


def _worker(job: tuple) -> Stats:
    n, seed_, opts, known = job
    return fuzz(n, seed_, n, opts, known=known,
                log=lambda msg: print(f"[seed {seed_}] {msg}", flush=True))


def fuzz_jobs(n: int, seed0: int, jobs: int, chunk: int, opts: Options,
              progress=lambda stats, done: None) -> Stats:
    """fuzz() over `jobs` processes: chunk k (seed seed0 + k) is one task; each finished task is
    merged and passed to `progress(stats, done)`, and the next task starts knowing every failure
    signature found so far (so none is shrunk twice)."""
    if jobs <= 1:
        stats = fuzz(n, seed0, chunk, opts)
        progress(stats, True)
        return stats
    import multiprocessing

    tasks = iter([(min(chunk, n - k * chunk), seed0 + k) for k in range(-(-n // chunk))])
    merged, running = Stats(), []
    with multiprocessing.get_context("fork").Pool(jobs) as pool:

        def submit():
            task = next(tasks, None)
            if task is not None:
                job = (*task, opts, frozenset(merged.failures))
                running.append(pool.apply_async(_worker, (job,)))

        for _ in range(jobs):
            submit()
        while running:
            done = next((r for r in running if r.ready()), None)
            if done is None:
                time.sleep(0.2)
                continue
            running.remove(done)
            merged = merge([merged, done.get()])
            submit()
            progress(merged, not running)
    return merged


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=1000)
    ap.add_argument("--findings", default=None, help="append each new failure to this file")
    ap.add_argument("--skip", default="", help="comma-separated families (or 'mixed', 'no_grad')"
                    " to leave out, to look past a known failure; the profiles skip nothing")
    ap.add_argument("--max-failures", type=int, default=None, help="stop after this many "
                    "distinct failures")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--only", default="", help="comma-separated mismatch kinds that count as "
                    "failures (value, nonfinite, grad_none, shape, dtype, requires_grad, error, "
                    "generator); default: all. For negative controls.")
    ap.add_argument("--no-shrink", action="store_true", help="report failures unshrunk "
                    "(still cut to the failing line's dependencies)")
    ap.add_argument("--no-json", action="store_true", help="do not write fuzz.json")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    skip = frozenset(s for s in args.skip.split(",") if s)
    only = frozenset(s for s in args.only.split(",") if s)
    opts = Options(skip, not args.no_shrink, only, args.max_failures, args.findings)
    def progress(stats: Stats, done: bool) -> None:
        """Rewrite fuzz.json after every finished chunk (complete: false until the end)."""
        cpu = stats.cpu if args.jobs > 1 else time.process_time()  # workers + (1 job) import
        summary = {**stats.summary(), "complete": done, "target_programs": args.programs,
                   "seconds": round(time.perf_counter() - start, 1), "cpu_seconds": round(cpu, 1),
                   "jobs": args.jobs, "seed": args.seed, "chunk": args.chunk,
                   "skip": sorted(skip), "only": sorted(only),
                   "rtol": {"float64": RTOL64, "float32": RTOL32},
                   "minitorch": os.path.dirname(mt.__file__)}
        if not args.no_json:
            from artifacts import write_json

            path = write_json("fuzz.json", summary)
            if done:
                print("wrote", path)

    stats = fuzz_jobs(args.programs, args.seed, args.jobs, args.chunk, opts, progress)
    seconds = time.perf_counter() - start
    cpu = stats.cpu if args.jobs > 1 else time.process_time()
    print(f"{stats.programs} programs ({stats.executions} executions) in {seconds:.0f} s "
          f"({cpu:.0f} s CPU); "
          f"{len(stats.failures)} distinct failures; minitorch at {os.path.dirname(mt.__file__)}")
    for sig, f in sorted(stats.failures.items()):
        print(f"  {f['count']:6d}  {sig}")
    print(f"both raised (a valid refusal, same statement): {sum(stats.refused.values())} "
          f"programs; by family: {stats.refused.most_common(8)}")
    print("documented deliberate differences met (README):", dict(stats.deliberate))
    print("largest error/tol among agreeing values:", stats.max_ratio)
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(main())
