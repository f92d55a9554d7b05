"""torch.einsum as a composite of registered ops: repeated labels of one operand become its
diagonal (getitem), labels no one else needs are summed, and operands are contracted left to
right by permute/reshape/matmul, so the gradient of every step is the ops' own.
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .kernels import ArgumentError
from .registry import composite
from .tensor import Tensor

_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # torch's order: A-Z before a-z


def _fail(message: str):
    raise ArgumentError(f"einsum(): {message}")


def _labels(term: str, ndim: int | None, n_ell: int) -> list:
    """The labels of one term: letters, and the ellipsis as the n_ell ints -n_ell..-1 (right
    aligned across operands, so broadcast dims share a label). ndim None: the output term."""
    if term.count("...") > 1:
        _fail(f"more than one '...' in the term '{term}'")
    head, ell, tail = term.partition("...")
    for c in head + tail:
        if c not in _LETTERS:
            _fail(f"'{c}' in '{term}' is not a subscript: use letters a-z, A-Z and '...'")
    if ndim is not None:
        named = len(head) + len(tail)
        if (named != ndim) if not ell else (named > ndim):
            _fail(f"the term '{term}' has {named} subscript(s) for an operand of {ndim} dim(s)")
        n_ell = ndim - named if ell else 0
    return [*head, *range(-n_ell, 0), *tail] if ell else [*head]


def _parse(equation: str, shapes: list[tuple]) -> tuple[list[list], list]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        _fail(f"'{equation}' has {len(terms)} operand term(s) for {len(shapes)} operand(s)")
    ins = [_labels(t, len(s), 0) for t, s in zip(terms, shapes)]
    n_ell = max((sum(isinstance(a, int) for a in labs) for labs in ins), default=0)
    if not arrow:  # implicit: the ellipsis, then the letters used once, in torch's order
        counts = Counter(a for labs in ins for a in labs if isinstance(a, str))
        return ins, [*range(-n_ell, 0), *sorted((c for c, k in counts.items() if k == 1),
                                                key=_LETTERS.index)]
    if "..." in rhs and not any("..." in t for t in terms):
        _fail("'...' in the output but in no operand")
    out = _labels(rhs, None, n_ell)
    known = {a for labs in ins for a in labs}
    for a in out:
        if out.count(a) > 1:
            _fail(f"the output subscript '{a}' appears more than once")
        if a not in known:
            _fail(f"the output subscript '{a}' appears in no operand")
    return ins, out


def _diagonal(x: Tensor, labs: list) -> tuple[Tensor, list]:
    """x with each repeated label's dims replaced by their diagonal (last)."""
    while len(set(labs)) < len(labs):
        a = next(a for a in labs if labs.count(a) > 1)
        where_ = [i for i, b in enumerate(labs) if b == a]
        sizes = {x.shape[i] for i in where_}
        if len(sizes) > 1:
            _fail(f"subscript '{a}' is repeated for dims of sizes {sorted(sizes)}")
        rest = [i for i in range(len(labs)) if i not in where_]
        x = x.permute(*rest, *where_)
        n = x.shape[-1]
        grid = np.arange(n)
        x = x[(Ellipsis, *([grid] * len(where_)))]
        labs = [labs[i] for i in rest] + [a]
    return x, labs


def _sum_out(x: Tensor, labs: list, keep: set) -> tuple[Tensor, list]:
    drop = [i for i, a in enumerate(labs) if a not in keep]
    if drop:
        x = x.sum(tuple(drop))
    return x, [a for a in labs if a in keep]


def _contract(a: Tensor, la: list, b: Tensor, lb: list, keep: set) -> tuple[Tensor, list]:
    """The product of two operands summed over their shared labels not in `keep`, as a batched
    matmul: (batch, left, shared) @ (batch, shared, right)."""
    size = {}
    for x, labs in ((a, la), (b, lb)):
        for n, lab in zip(x.shape, labs):
            if size.get(lab, 1) != 1 and n not in (1, size[lab]):
                _fail(f"subscript {_name(lab)} has sizes {size[lab]} and {n}, which do not "
                      "broadcast")
            size[lab] = n if size.get(lab, 1) == 1 else size[lab]
    batch = [lab for lab in la if lab in lb and lab in keep]
    summed = [lab for lab in la if lab in lb and lab not in keep]
    left = [lab for lab in la if lab not in lb]
    right = [lab for lab in lb if lab not in la]

    def arrange(x, labs, order):
        x = x.permute(*(labs.index(lab) for lab in order))
        return x.expand(*(size[lab] for lab in order))  # size-1 dims broadcast, as torch

    def prod(group):
        return int(np.prod([size[lab] for lab in group], dtype=np.int64))

    a = arrange(a, la, batch + left + summed).reshape(prod(batch), prod(left), prod(summed))
    b = arrange(b, lb, batch + summed + right).reshape(prod(batch), prod(summed), prod(right))
    y = a.matmul(b).reshape(*(size[lab] for lab in batch + left + right))
    return y, batch + left + right


def _name(lab) -> str:
    return f"'{lab}'" if isinstance(lab, str) else "of '...'"


@composite("einsum")
def einsum(equation: str, *operands: Tensor) -> Tensor:
    """torch.einsum: out[output labels] = sum over the other labels of the product of the
    operands' elements at those labels (a label repeated within a term takes the diagonal; no
    output term: the ellipsis, then the labels used once, A-Z before a-z; dims of size 1
    broadcast). The sublist form einsum(x, [0, 1], ...) is not supported.

    Args:
        equation: e.g. 'ij,jk->ik', 'bij,bjk', '...ij->...ji', 'ii', 'i,j->ij'.
        operands: Tensors, or one list of them.
    Returns:
        A Tensor in the operands' promoted dtype; differentiable in every floating operand.
    """
    if not isinstance(equation, str):
        _fail("the sublist form einsum(op, [dims], ...) is not supported; pass an equation "
              "string such as 'ij,jk->ik'")
    if len(operands) == 1 and isinstance(operands[0], Sequence):
        operands = tuple(operands[0])
    if not operands:
        _fail("needs at least one operand")
    for x in operands:
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum(): operands must be Tensors, not {type(x).__name__}")
    ins, out = _parse(equation, [x.shape for x in operands])
    ops = [_diagonal(x, labs) for x, labs in zip(operands, ins)]
    if len({x.dtype for x, _ in ops}) > 1:
        raise RuntimeError(f"einsum(): operands have different dtypes "
                           f"({', '.join(str(x.dtype) for x, _ in ops)}), as torch refuses")
    y, ly = None, []
    for k, (x, labs) in enumerate(ops):
        later = {a for _, ls in ops[k + 1:] for a in ls} | set(out)
        x, labs = _sum_out(x, labs, later | set(ly))  # labels no one else needs: summed now
        if y is None:
            y, ly = x, labs
        else:
            y, ly = _contract(y, ly, x, labs, later)
    y, ly = _sum_out(y, ly, set(out))
    return y.permute(*(ly.index(a) for a in out)) if ly != out else y
