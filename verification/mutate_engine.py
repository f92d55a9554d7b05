"""Mutation testing of the engine itself (toposort, pending-gradient accumulation, unbroadcast, leaf
accumulation, graph release, apply's needs_grad and dtype rule, no_grad, replay's memory plan),
not of the vjp rules.

    python -m verification.mutate_engine                  # every mutant, 2 workers, rev HEAD
    python -m verification.mutate_engine --list           # show the mutants, run nothing
    python -m verification.mutate_engine --only graph.py:_propagate,tensor/core.py:apply
    python -m verification.mutate_engine --rev WORKTREE   # the working tree, not a commit

Each mutant is one AST edit of one function of minitorch/engine/{graph,tensor,registry}.py (drop
or flip an in-place update, overwrite instead of accumulate, swap operands, drop a statement,
return early, a condition made True/False, a comparison or `not` inverted, an off-by-one in a
constant, index or range, keepdims/copy flags flipped or dropped, a copy or conversion removed,
pop -> get, any <-> all, ...). It is written into a COPY of the repository at --rev (extracted
with `git archive`, so other people's uncommitted edits never leak in and the checkout's own
minitorch/ is never touched), and the copy's suite is run in stages (PYTHONPATH = the copy),
fastest first, until one kills it. Survivors must be listed in EQUIVALENT with the reason they
cannot be killed; any other survivor makes the exit status 1.
Results: reports/artifacts/mutation_engine.json.
It is a script (and a library for test_mutate_engine.py), never collected as a test.
"""

from __future__ import annotations

import argparse
import ast
import compileall
import copy
import hashlib
import importlib.util
import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from verification.mutate_vjps import replace_node

ROOT = Path(__file__).resolve().parent.parent

# The engine's functions under test: None = every function and method of the file.
TARGETS: dict[str, tuple[str, ...] | None] = {
    "minitorch/engine/graph.py": None,
    "minitorch/engine/registry.py": None,
    "minitorch/engine/node.py": None,
    "minitorch/engine/dtypes.py": None,
    "minitorch/engine/runtime.py": None,
    "minitorch/engine/pool.py": None,
    "minitorch/engine/functions.py": ("_join",),
    "minitorch/engine/tensor/core.py": (
        "apply", "_as_array", "Tensor._make", "Tensor.requires_grad_", "Tensor.backward",
        "Tensor.accumulate_grad", "Tensor.detach", "Tensor.zero_grad", "Tensor.to",
        "Tensor.__iter__"),
    "minitorch/engine/tensor/interop.py": ("Interop.__bool__", "Interop.__index__"),
    "minitorch/engine/tensor/arithmetic.py": (
        "Arithmetic._pair", "Arithmetic._binary", "Arithmetic._true_divide",
        "Arithmetic._subtract", "Arithmetic.pow", "_foreign"),
    "minitorch/engine/tensor/pointwise.py": ("Pointwise._floating",),
    "minitorch/engine/tensor/reduce.py": ("Reduce._flipped",),
    "minitorch/engine/tensor/indexing.py": ("Indexing.__setitem__",),
    "minitorch/engine/tensor/inplace.py": ("InPlace._update", "_shared"),
}
def _short(file: str) -> str:
    """A target's name in mutant keys: its path inside minitorch/engine (tensor/core.py)."""
    return Path(file).as_posix().removeprefix("minitorch/engine/")


# What a copy needs to run the suite.
COPY_PATHS = [
    "minitorch", "verification", "conftest.py", "artifacts", "artifacts.py", "pyproject.toml"]
# Stages, fastest first: (name, files, extra pytest args). A mutant goes on to the next stage only
# if it survived the previous one; files missing at the revision are left out. The two 100k-node
# tests of test_engine.py (recursion depth; no mutant here makes the traversal recursive) cost
# half the engine stage, so mutants skip them. Survivors listed in EQUIVALENT skip the last
# stage (the whole-op suite), which only unlisted survivors pay for.
STAGES: list[tuple[str, list[str], list[str]]] = [
    ("engine", ["verification/test_engine_semantics.py", "verification/test_engine.py"],
     ["-k", "not 100k"]),
    ("threads", ["verification/test_parallel.py", "verification/test_replay.py",
                 "verification/test_pool.py", "verification/test_replay_fuzz.py"], []),
    ("ops", ["verification/test_unbroadcast.py", "verification/test_torch_semantics.py",
             "verification/test_errors.py", "verification/test_debug.py",
             "verification/test_fused.py", "verification/test_inplace.py",
             "verification/test_dtype_semantics.py", "verification/test_torch_api.py"], []),
    ("suite", ["verification/test_gradcheck.py", "verification/test_torch_parity.py",
               "verification/test_program_fuzz.py::test_program_fuzz_matches_torch"], []),
]
STAGE_TIMEOUT = {"suite": 8.0}  # x --timeout: 2,000 fuzzed programs take minutes when loaded

_WHERE_WRAP = ("where(False everywhere, old, result) has result's values, passes the whole "
               "gradient to result and none to old: wrapping in more cases adds a node only")
# Survivors that no test can kill, keyed by mutant key (function|operator|before -> after).
# The reason says why the mutant computes the same observable result as the original.
_SAME_SHAPE = ("a fast path: without it the general path sums over no axes and returns the same "
               "values")
_COPY = "np.array copies by default, so dropping copy=True changes nothing"
_ALWAYS_COPY = ("always summing into a fresh copy instead of in place gives the same values; it "
                "only allocates once more per contribution")
_DEL_UNLOCKS = ("__dict__.clear() drops the only reference to the node's _Locks, whose __del__ "
                "unlocks at once (CPython reference counting)")
_SHORT_PATH = ("a short path: without it the general promotion finds the same dtype and casts "
               "nothing, so the same tensors come out")
_VERSION = "versions are only compared for change: any start value or non-zero step works"
_KEPT_A = ("pool.kept counts only arrays a pool holds itself (slots, recorded arrays), and take "
           "and _lend hand out new views of them (reshape, view), never one itself: kept(a) is 0 "
           "for every array exclusive is asked about (a kept one is met only as a base, below)")
_COUNT = ("active sets count = 0 before its block, and take reads it only in a run (a lent "
          "request returns before)")
_AFTER_PLAN = "read only once slots is not None, and _plan sets it together with slots"
_DEATH_SEEN = ("a recorded death is >= 1: request k is first checked for death at request k + 1 "
               "or at the run's end, so > 0 and >= 1 select the same requests as >= 0")
_LENDS = "lends is read only by take, reached only inside _serving, which sets it first"
_STALE_MARK = ("a mark left on an unused slot only costs _free one more check (which finds it "
               "unused); a held slot stays marked either way")
_INT64 = ("np.array of Python ints is int64 already (NumPy 2's default integer); an empty record "
          "gives float64, which nothing indexes (no spans)")
_NO_SLOT_BOUNDS = ("the bounds of a request with no slot: out never marks one (take and _lend "
                   "mark slotted requests, _serving those in by_size), so _free never reads them")
_LIST_BOUNDS = ("compared with the other bounds' int64 array or an element of it, a list of ints "
                "is converted by NumPy: the overlap masks are the same")
_DEL_WATCHED = ("watched is empty whenever a pool can be freed: each way out of a recording run "
                "(the plan, plan=False, an exception, the generator's close) clears it first")
EQUIVALENT: dict[str, str] = {
    "graph.py:unbroadcast|condition -> False|if grad.shape == shape:  ->  if False:": _SAME_SHAPE,
    "graph.py:unbroadcast|condition -> True|if extra:  ->  if True:":
        "sum over axis=() (extra == 0) is a copy with the same values",
    "graph.py:unbroadcast|condition -> True|if axes:  ->  if True:":
        "sum over axis=() with keepdims is a copy with the same values",
    "graph.py:unbroadcast|drop right operand|n == 1 and grad.shape[i] != 1  ->  n == 1":
        "summing a size-1 axis that is already size 1 (keepdims) changes nothing",
    "graph.py:backward|flip bool constant|False  ->  True":
        "the default of retain_graph: its only caller, Tensor.backward, always passes it",
    "graph.py:backward|condition -> True|if grad_out is not None:  ->  if True:":
        "every node the toposort reaches is a parent through an input that needs grad, and "
        "_propagate gives each such input a gradient or raises: grad_out is never None",
    "graph.py:_propagate|condition -> True|if runtime.backward_hooks:  ->  if True:":
        "a guard for speed: iterating the empty hook list does nothing",
    "graph.py:add_pending|condition -> False|if exclusive(prev):  ->  if False:": _ALWAYS_COPY,
    "graph.py:add_pending|drop keyword out=|np.add(prev, grad, out=pool.empty(prev.shape, "
    "prev.dtype))  ->  np.add(prev, grad)": "np.add then allocates the new array itself: the "
                                            "same values, outside a replay's memory plan",
    "graph.py:add_pending|pop -> get (never dropped)|pending.pop(key, None)  ->  pending.get(key, "
    "None)": "the dict's own reference makes exclusive(prev) False, so every later contribution "
             "is summed into a copy, which then replaces the entry: the same values",
    "tensor/core.py:Tensor.accumulate_grad|drop keyword copy=|np.array(grad, dtype=self.dtype, "
    "copy=True)  ->  np.array(grad, dtype=self.dtype)": _COPY,
    "tensor/core.py:Tensor.accumulate_grad|drop keyword dtype=|np.array(grad, dtype=self.dtype, "
    "copy=True)  ->  np.array(grad, copy=True)":
        "every gradient reaching a leaf already has its dtype: _propagate checks it, and "
        "Tensor.backward casts a leaf root's seed to the leaf's dtype",
    "node.py:Context.release|condition -> False|if self.locks is not None:  ->  if False:":
        _DEL_UNLOCKS,
    "node.py:_Locks._hold|off by one (+1)|0  ->  1 #3": _VERSION,
    "node.py:inplace|in-place Add -> Sub|lock[1] += 1  ->  lock[1] -= 1": _VERSION,
    "node.py:inplace|off by one (+1)|1  ->  2": _VERSION,
    "node.py:inplace|condition -> False|if lock is None:  ->  if False:":
        "the early return for an array no graph saved is a shortcut: the general path yields "
        "the same array and re-locks only an array still in the table, which this one is not",
    "tensor/core.py:apply|condition -> True|if record:  ->  if True:":
        "sets out_shape/out_dtype on a node apply then discards unread",
    "tensor/core.py:apply|condition -> True|if runtime.forward_hooks:  ->  if True:":
        "a guard for speed: timing and iterating the empty hook list does nothing",
    "tensor/core.py:apply|conditional -> its 'if' value|time.perf_counter() if "
    "runtime.forward_hooks else 0.0  ->  time.perf_counter()":
        "reads the clock even when no hook will see it",
    "tensor/core.py:apply|drop right operand|local.grad_enabled and op.differentiable  ->  "
    "local.grad_enabled":
        "every non-differentiable op (comparisons, argmax) returns bool or int, which apply "
        "never records; the node is discarded (its saved arrays unlocked) at once",
    # in-place updates (InPlace._update)
    "tensor/inplace.py:InPlace._update|condition -> True|if tracked:  ->  if True:":
        "under no_grad the block only wraps and casts a result that has no node: the same "
        "values are written",
    "tensor/inplace.py:InPlace._update|flip bool constant|False  ->  True": _WHERE_WRAP,
    "tensor/inplace.py:InPlace._update|condition -> True|if self.requires_grad and (keep_node or "
    "out._ctx is None):  ->  if True:": _WHERE_WRAP,
    "tensor/inplace.py:InPlace._update|And -> Or|self.requires_grad and (keep_node or "
    "out._ctx is None)  ->  self.requires_grad or (keep_node or out._ctx is None)": _WHERE_WRAP,
    "tensor/inplace.py:InPlace._update|drop right operand|self.requires_grad and (keep_node or "
    "out._ctx is None)  ->  self.requires_grad": _WHERE_WRAP,
    "tensor/inplace.py:InPlace._update|drop left operand|self.requires_grad and (keep_node or "
    "out._ctx is None)  ->  keep_node or out._ctx is None": _WHERE_WRAP,
    "tensor/inplace.py:InPlace._update|drop right operand|keep_node or out._ctx is None  ->  "
    "keep_node":
        "only fill_ and copy_ give a result without a node from a tensor that requires grad "
        "(every other update reads it), and both pass keep_node",
    "tensor/inplace.py:InPlace._update|Is -> IsNot|out._ctx is None  ->  out._ctx is not None":
        "a result without a node from a tensor that requires grad comes only from fill_ and "
        "copy_, which pass keep_node; wrapping a result that has a node adds a node only",
    "tensor/inplace.py:InPlace._update|drop statement|return self  ->  pass":
        "self.data is out.data by then: the write below copies the array onto itself and sets "
        "the same node",
    "tensor/inplace.py:InPlace._update|drop keyword casting=|np.copyto(array, out.data, "
    "casting='same_kind')  ->  np.copyto(array, out.data)":
        "same_kind is np.copyto's default casting; the keyword only says so",
    "tensor/indexing.py:Indexing.__setitem__|drop left operand|runtime.local.grad_enabled and ("
    "self.requires_grad or value.requires_g  ->  self.requires_grad or value.requires_grad":
        "under no_grad the write then goes through _update, untracked: no copy, no node, the "
        "same values written",
    "tensor/inplace.py:_shared|drop right operand|a.base is not None or not graph._TRUSTED  ->  "
    "a.base is not None":
        "graph._TRUSTED is True on the CPython versions the suite runs on (3.11-3.13)",
    # the dispatch's short paths: off, the general path computes the same thing
    "dtypes.py:promote|condition -> False|if all((t.dtype == first for t in tensors)):  ->  "
    "if False:": _SHORT_PATH,
    "dtypes.py:promote|Eq -> NotEq|t.dtype == first  ->  t.dtype != first": _SHORT_PATH,
    "dtypes.py:promote|conditional -> its 'else' value|tensors[0].dtype if tensors else None  "
    "->  None": _SHORT_PATH,
    "dtypes.py:promote|conditional -> its 'if' value|tensors[0].dtype if tensors else None  ->  "
    "tensors[0].dtype": "promote is never called without tensors (every caller passes two or "
                        "more, cat/stack refuse an empty list first)",
    "dtypes.py:promote|conditional -> its 'else' value|t if t.dtype == dtype else t.to(dtype)  "
    "->  t.to(dtype)": "Tensor.to returns the tensor itself when the dtype is already its own",
    "tensor/core.py:apply|condition -> True|if True in needs:  ->  if True:":
        "the parents of a node that records nothing are never read: backward walks recorded "
        "nodes only and the replay tape is handed None for the others",
    "tensor/arithmetic.py:Arithmetic._pair|condition -> False|if other._data.dtype == "
    "self._data.dtype:  ->  if False:": _SHORT_PATH,
    "tensor/arithmetic.py:Arithmetic._pair|condition -> False|if type(other) is int and dtype "
    "== np.int64:  ->  if False:": "self._lift(n) for a Python int is Tensor(n): the same int64 "
                                   "0-d array the short path wraps",
    "tensor/arithmetic.py:Arithmetic._pair|drop keyword dtype=|np.asarray(other, dtype=dtype)  "
    "->  np.asarray(other) #2": "a Python int as an array is int64 already (NumPy 2 on Linux); "
                                "one beyond int64 fails either way",
    "graph.py:exclusive|Add -> Sub|_ALONE + pool.kept(a)  ->  _ALONE - pool.kept(a)": _KEPT_A,
    "graph.py:exclusive|drop right operand|_ALONE + pool.kept(a)  ->  _ALONE": _KEPT_A,
    "pool.py:_mapped|condition -> True|if _track is not None:  ->  if True:":
        "ctypes.pythonapi has PyTraceMalloc_Track on every CPython, the only interpreter where "
        "replay makes a pool (graph._TRUSTED)",
    "pool.py:_mapped|off by one (-1)|1  ->  0":
        "an empty np.frombuffer view starts at the same first byte: the same address is tracked",
    "pool.py:Pool.__init__|drop statement|self.count = 0  ->  pass": _COUNT,
    "pool.py:Pool.__init__|off by one (+1)|0  ->  1": _COUNT,
    "pool.py:Pool.__init__|drop statement|self.by_size: list[int] = []  ->  pass": _AFTER_PLAN,
    "pool.py:Pool.__init__|flip bool constant|False  ->  True": _LENDS,
    "pool.py:Pool.__init__|drop statement|self.lends = False  ->  pass": _LENDS,
    "pool.py:Pool.__init__|drop statement|self.overlaps: list[frozenset[int]] = []  ->  pass":
        _AFTER_PLAN,
    "pool.py:Pool._free|drop statement|self.out.discard(j)  ->  pass": _STALE_MARK,
    "pool.py:Pool._free|return None instead|return False  ->  return":
        "its callers only test its truth: None is as false as False",
    "pool.py:Pool._lend|condition -> True|if self.slots is not None:  ->  if True:":
        "before a plan by_size is still [] (_plan sets it with slots), so no slot is found",
    "pool.py:Pool.take|off by one (-1)|-1  ->  -2":
        "-1 only marks a request not seen dead: any negative value is left out by deaths[k] >= 0 "
        "alike and read nowhere else",
    "pool.py:Pool._plan|swap unpacked targets|self.watched, self.watched_k = ([], [])  ->  "
    "self.watched_k, self.watched = ([], [])": "both get a new empty list",
    "pool.py:Pool._plan|GtE -> Gt (boundary)|self.deaths[k] >= 0  ->  self.deaths[k] > 0":
        _DEATH_SEEN,
    "pool.py:Pool._plan|off by one (+1)|0  ->  1 #2": _DEATH_SEEN,
    "pool.py:Pool._plan|off by one (+1)|0  ->  1":
        "the default of total, used only with no slot, where max(total, 1) maps 1 byte either way",
    "pool.py:Pool._plan|drop keyword dtype=|np.array([-(-n // ALIGN) * ALIGN for n in "
    "self.sizes], dtype=np.int64)  ->  np.array([-(-n // ALIGN) * ALIGN for n in self.sizes])":
        _INT64,
    "pool.py:Pool._plan|drop keyword dtype=|np.array(self.deaths, dtype=np.int64)  ->  "
    "np.array(self.deaths)": _INT64,
    "pool.py:Pool._plan|off by one (+1)|0  ->  1 #3": _NO_SLOT_BOUNDS,
    "pool.py:Pool._plan|off by one (+1)|0  ->  1 #4": _NO_SLOT_BOUNDS,
    "pool.py:Pool._plan|off by one (+1)|0  ->  1 #5":
        "the three layouts place the same requests, so all are empty together: the default never "
        "decides between them",
    "pool.py:Pool._plan|remove array() (copy/conversion)|np.array([offsets.get(k, 0) for k in "
    "range(len(self.sizes))], np.int64  ->  [offsets.get(k, 0) for k in range(len(self.sizes))]":
        _LIST_BOUNDS,
    "pool.py:Pool._plan|remove array() (copy/conversion)|np.array([offsets[k] + self.sizes[k] if "
    "k in offsets else 0 for k in r  ->  [offsets[k] + self.sizes[k] if k in offsets else 0 for "
    "k in range(len(": _LIST_BOUNDS,
    "pool.py:_place|drop keyword dtype=|np.zeros(len(order), dtype=np.int64)  ->  "
    "np.zeros(len(order)) #2": "the offsets (at) are whole numbers far below 2**53, exact in "
                               "float64, and int(offset) hands each back as an int",
    "pool.py:Pool.__del__|drop statement|for a in getattr(self, 'watched', ()):  ->  pass":
        _DEL_WATCHED,
    "pool.py:Pool.__del__|drop statement|_kept.discard(id(a))  ->  pass": _DEL_WATCHED,
    "pool.py:Pool.__del__|condition -> True|if slot is not None:  ->  if True:":
        "discards id(None), which is never in _kept (only live arrays' ids are)",
}


# ---- mutation operators ------------------------------------------------------------------------
Edit = tuple[str, Callable[[ast.AST], ast.AST]]  # (operator, node -> replacement node)

_FLIP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
_NEGATE = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
           ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
           ast.Gt: ast.LtE, ast.LtE: ast.Gt}
_BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_COPIES = ("copy", "array", "asarray", "ascontiguousarray")  # calls that copy or convert
_NOISE_STMTS = (ast.Pass, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)


def _with(node: ast.AST, **fields) -> ast.AST:
    new = copy.copy(node)
    for k, v in fields.items():
        setattr(new, k, v)
    return new


def _plus(node: ast.expr, k: int) -> ast.expr:
    return ast.BinOp(node, ast.Add() if k > 0 else ast.Sub(), ast.Constant(abs(k)))


def _is_docstring(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and \
        isinstance(node.value.value, str)


def expr_edits(node: ast.AST) -> list[Edit]:
    """Mutations replacing one expression node."""
    out: list[Edit] = []
    if isinstance(node, ast.BinOp):
        op = type(node.op)
        if op in (ast.Sub, ast.Div, ast.MatMult, ast.FloorDiv, ast.Mod, ast.Pow):
            out.append(("swap operands", lambda n: ast.BinOp(n.right, n.op, n.left)))
        if op in _FLIP:
            out.append((f"{op.__name__} -> {_FLIP[op].__name__}",
                        lambda n: _with(n, op=_FLIP[type(n.op)]())))
        if op in (ast.Add, ast.Sub, ast.Mult, ast.BitOr):
            out.append(("drop right operand", lambda n: n.left))
            out.append(("drop left operand", lambda n: n.right))
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        op = type(node.ops[0])
        if op in _NEGATE:
            out.append((f"{op.__name__} -> {_NEGATE[op].__name__}",
                        lambda n: _with(n, ops=[_NEGATE[type(n.ops[0])]()])))
        if op in _BOUNDARY:
            out.append((f"{op.__name__} -> {_BOUNDARY[op].__name__} (boundary)",
                        lambda n: _with(n, ops=[_BOUNDARY[type(n.ops[0])]()])))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("drop not", lambda n: n.operand))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.Constant) and type(node.operand.value) is int:
        out.append(("off by one (-1)", lambda n: ast.Constant(-n.operand.value - 1)))
        out.append(("off by one (+1)", lambda n: ast.Constant(-n.operand.value + 1)))
    elif isinstance(node, ast.BoolOp):
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        out.append((f"{type(node.op).__name__} -> {other.__name__}",
                    lambda n, o=other: _with(n, op=o())))
        if len(node.values) == 2:
            out.append(("drop right operand", lambda n: n.values[0]))
            out.append(("drop left operand", lambda n: n.values[1]))
    elif isinstance(node, ast.IfExp):
        out.append(("conditional -> its 'if' value", lambda n: n.body))
        out.append(("conditional -> its 'else' value", lambda n: n.orelse))
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        out.append(("flip bool constant", lambda n: ast.Constant(not n.value)))
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        out.append(("off by one (+1)", lambda n: ast.Constant(n.value + 1)))
        if node.value > 0:
            out.append(("off by one (-1)", lambda n: ast.Constant(n.value - 1)))
    elif isinstance(node, ast.Call):
        out += call_edits(node)
    return out


def call_edits(node: ast.Call) -> list[Edit]:
    f, out = node.func, []
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    if name in _COPIES and (node.args or isinstance(f, ast.Attribute) and not node.args):
        if node.args:  # np.array(x, ...) -> x
            out.append((f"remove {name}() (copy/conversion)", lambda n: n.args[0]))
        elif name == "copy":  # x.copy() -> x
            out.append(("remove .copy()", lambda n: n.func.value))
    if name in ("any", "all") and isinstance(f, ast.Name):
        other = "all" if name == "any" else "any"
        out.append((f"{name} -> {other}",
                    lambda n, o=other: _with(n, func=ast.Name(o, ast.Load()))))
    if name == "reversed" and isinstance(f, ast.Name) and node.args:
        out.append(("drop reversed()", lambda n: n.args[0]))
    if name == "range" and isinstance(f, ast.Name) and len(node.args) == 1:
        out.append(("range off by one (+1)", lambda n: _with(n, args=[_plus(n.args[0], 1)])))
        out.append(("range off by one (-1)", lambda n: _with(n, args=[_plus(n.args[0], -1)])))
    if name == "pop" and isinstance(f, ast.Attribute):
        if not node.args:
            out.append(("pop() -> pop(0)", lambda n: _with(n, args=[ast.Constant(0)])))
        else:
            out.append(("pop -> get (never dropped)", lambda n: _with(
                n, func=ast.Attribute(n.func.value, "get", ast.Load()))))
    for i, kw in enumerate(node.keywords):
        if kw.arg is None:
            continue
        out.append((f"drop keyword {kw.arg}=",
                    lambda n, i=i: _with(n, keywords=n.keywords[:i] + n.keywords[i + 1:])))
        if isinstance(kw.value, ast.Constant) and type(kw.value.value) is bool:
            continue  # flipped by the bool-constant operator
        if kw.arg in ("keepdims", "copy", "retain_graph"):
            out.append((f"negate keyword {kw.arg}=", lambda n, i=i: _with(n, keywords=[
                *n.keywords[:i], ast.keyword(n.keywords[i].arg, ast.UnaryOp(
                    ast.Not(), n.keywords[i].value)), *n.keywords[i + 1:]])))
    return out


def stmt_edits(node: ast.stmt, top_level: bool, returns_value: bool, last: bool,
               redundant: bool) -> list[Edit]:
    """Mutations replacing one statement. `last`: the function's final statement; `redundant`:
    the only statement of an else-less `if` (dropping it = that if's condition -> False)."""
    out: list[Edit] = []
    if isinstance(node, _NOISE_STMTS) or _is_docstring(node):
        return out
    same_as_false = isinstance(node, (ast.If, ast.While)) and not node.orelse
    if not (same_as_false or redundant or last and isinstance(node, ast.Return)):
        out.append(("drop statement", lambda n: ast.Pass()))  # else an equal mutant exists
    if top_level and not returns_value and not last and not isinstance(node, ast.Return):
        out.append(("return early (instead of this statement)", lambda n: ast.Return(None)))
    if isinstance(node, ast.AugAssign):
        op = type(node.op)
        if op in _FLIP:
            out.append((f"in-place {op.__name__} -> {_FLIP[op].__name__}",
                        lambda n: _with(n, op=_FLIP[type(n.op)]())))
        out.append(("overwrite instead of accumulate (x op= y -> x = y)",
                    lambda n: ast.Assign([n.target], n.value)))
    elif isinstance(node, (ast.If, ast.While)):
        out.append(("condition -> True", lambda n: _with(n, test=ast.Constant(True))))
        out.append(("condition -> False", lambda n: _with(n, test=ast.Constant(False))))
    elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple) and \
            len(node.targets[0].elts) == 2:
        out.append(("swap unpacked targets",
                    lambda n: _with(n, targets=[ast.Tuple(n.targets[0].elts[::-1], ast.Store())])))
    elif isinstance(node, ast.Return) and node.value is not None and \
            not (isinstance(node.value, ast.Constant) and node.value.value is None):
        out.append(("return None instead", lambda n: ast.Return(None)))
    if isinstance(node, (ast.If, ast.For, ast.While, ast.Try)) and getattr(node, "orelse", None):
        out.append(("drop else branch", lambda n: _with(n, orelse=[])))
    return out


# ---- mutants -----------------------------------------------------------------------------------
@dataclass
class Mutant:
    file: str
    function: str
    node: int  # index of the mutated node in ast.walk(function)
    edit: int  # index of the edit among that node's edits
    line: int
    operator: str
    change: str  # 'before  ->  after' (first lines)
    key: str = ""
    status: str = "not run"  # killed | survived | not run
    how: str | None = None  # test failure | collection error | timeout
    stage: str | None = None
    killed_by: str | None = None  # the first failing test's id
    seconds: float = 0.0
    equivalent: str | None = None  # the reason, for a listed survivor
    function_sha: str = ""  # of the unmutated function's source: results reusable while equal
    stages_run: list = field(default_factory=list)
    reused_from: str | None = None  # commit of the run a 'killed' result was taken from
    extra: dict = field(default_factory=dict)


def functions(tree: ast.Module, wanted: tuple[str, ...] | None) -> Iterator[tuple[str, ast.AST]]:
    """(qualified name, def node) of the module's functions and methods, in file order."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pairs = [(node.name, node)]
        elif isinstance(node, ast.ClassDef):
            pairs = [(f"{node.name}.{m.name}", m) for m in node.body
                     if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        else:
            continue
        for name, fn in pairs:
            if wanted is None or name in wanted:
                yield name, fn


def _shape_facts(func: ast.AST) -> tuple[set[int], bool, int, set[int]]:
    """(ids of top-level statements, returns a value, id of the last statement, ids of the
    sole statements of else-less ifs)."""
    sole = {id(n.body[0]) for n in ast.walk(func)
            if isinstance(n, ast.If) and not n.orelse and len(n.body) == 1}
    return {id(s) for s in func.body}, _returns_value(func), id(func.body[-1]), sole


def _edits_at(node: ast.AST, func: ast.AST, facts: tuple) -> list[Edit]:
    top, returns_value, last, sole = facts
    if node is func:
        return []
    if isinstance(node, ast.stmt):
        return stmt_edits(node, id(node) in top, returns_value, id(node) == last,
                          id(node) in sole)
    if getattr(node, "_negated", False):
        return []  # the 1 of -1, or an annotation
    return expr_edits(node)


def _mark_negated(func: ast.AST) -> None:
    """Mark the nodes no operator touches: the 1 of -1 (mutated as a whole) and annotations
    (never evaluated under `from __future__ import annotations`)."""
    for n in ast.walk(func):
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and \
                isinstance(n.operand, ast.Constant):
            n.operand._negated = True  # type: ignore[attr-defined]
        notes = [getattr(n, "annotation", None), getattr(n, "returns", None)]
        for note in notes:
            for m in ast.walk(note) if note is not None else ():
                m._negated = True  # type: ignore[attr-defined]


def _returns_value(func: ast.AST) -> bool:
    return any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(func)
               if n is not func)


def _find(tree: ast.Module, name: str) -> ast.AST:
    return next(fn for qual, fn in functions(tree, None) if qual == name)


def _mutate(tree: ast.Module, name: str, k: int, e: int) -> tuple[ast.AST, ast.AST, ast.AST]:
    """Apply edit e at node k of function `name` in `tree` (in place): (func, old, new)."""
    func = _find(tree, name)
    _mark_negated(func)
    target = list(ast.walk(func))[k]
    new = _edits_at(target, func, _shape_facts(func))[e][1](target)
    replace_node(func, target, new)
    ast.fix_missing_locations(func)
    return func, target, new


def mutated_source(text: str, name: str, k: int, e: int) -> str:
    """The file's text with one mutant spliced in (only the function's lines change)."""
    tree = ast.parse(text)
    func, _, _ = _mutate(tree, name, k, e)
    original = _find(ast.parse(text), name)
    start = min([original.lineno] + [d.lineno for d in original.decorator_list]) - 1
    lines = text.splitlines(keepends=True)
    indent = " " * original.col_offset
    body = "".join(indent + ln + "\n" if ln else "\n" for ln in ast.unparse(func).split("\n"))
    return "".join(lines[:start]) + body + "".join(lines[original.end_lineno:])


def _first_line(node: ast.AST) -> str:
    src = ast.unparse(node).strip().splitlines()
    return (src[0] if src else "pass")[:70]


def mutants_of(rel: str, text: str, wanted: tuple[str, ...] | None) -> list[Mutant]:
    """Every distinct mutant of the wanted functions of one file (textual no-ops dropped)."""
    out, seen = [], set()
    tree = ast.parse(text)
    for name, func in functions(tree, wanted):
        base = ast.unparse(func)
        sha = hashlib.sha1(base.encode()).hexdigest()[:12]
        _mark_negated(func)
        facts = _shape_facts(func)
        for k, node in enumerate(ast.walk(func)):
            for e, (operator, _) in enumerate(_edits_at(node, func, facts)):
                mtree = ast.parse(text)
                mfunc, old, new = _mutate(mtree, name, k, e)
                src = ast.unparse(mfunc)
                if src == base or (name, src) in seen:
                    continue  # no change, or the same function another edit already made
                seen.add((name, src))
                before, after = _first_line(old), _first_line(new)
                if before == after:  # e.g. an else branch dropped: the first line is unchanged
                    after = f"(same line, {operator})"
                change = f"{before}  ->  {after}"
                out.append(Mutant(rel, name, k, e, getattr(node, "lineno", func.lineno),
                                  operator, change, function_sha=sha))
    keys: dict[str, int] = {}
    for m in out:
        base_key = f"{_short(m.file)}:{m.function}|{m.operator}|{m.change}"
        keys[base_key] = keys.get(base_key, 0) + 1
        m.key = base_key if keys[base_key] == 1 else f"{base_key} #{keys[base_key]}"
    return out


def all_mutants(src_root: Path, only: set[str] | None = None) -> list[Mutant]:
    """The mutants of every TARGETS function present under src_root (a tree with minitorch/)."""
    out = []
    for rel, wanted in TARGETS.items():
        path = src_root / rel
        if not path.exists():
            continue
        ms = mutants_of(rel, path.read_text(), wanted)
        if only:
            ms = [m for m in ms if f"{_short(m.file)}:{m.function}" in only
                  or _short(m.file) in only or m.key in only]
        out += ms
    return out


# ---- copies of the repository ------------------------------------------------------------------
def make_copy(dest: Path, rev: str, overlay: list[str]) -> list[str]:
    """Extract COPY_PATHS at `rev` (or the working tree for 'WORKTREE') into dest, then copy the
    `overlay` files over it from the working tree. Returns the overlaid files."""
    dest.mkdir(parents=True, exist_ok=True)
    if rev == "WORKTREE":
        for p in COPY_PATHS:
            src = ROOT / p
            if src.is_dir():
                shutil.copytree(src, dest / p, ignore=shutil.ignore_patterns(
                    "__pycache__", "*.pyc", "*.egg-info"))
            elif src.exists():
                shutil.copy2(src, dest / p)
    else:
        existing = [p for p in COPY_PATHS if subprocess.run(
            ["git", "cat-file", "-e", f"{rev}:{p}"], cwd=ROOT, capture_output=True).returncode == 0]
        archive = subprocess.run(["git", "archive", rev, *existing], cwd=ROOT,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    added = []
    for rel in overlay:
        if (ROOT / rel).exists() and rel not in added:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
            added.append(rel)
    compileall.compile_dir(dest / "minitorch", quiet=1)  # compiled once, not in every child
    return added


# The per-copy test server: imports the heavy dependencies once (numpy, pytest, hypothesis,
# torch), never minitorch or the suite; each request forks a child that runs pytest on the copy,
# so every child imports the copy's (mutated) minitorch afresh. Run with cwd = PYTHONPATH = copy.
SERVER = r"""
import importlib, json, os, pkgutil, signal, sys, time
import numpy, pytest, _pytest
for name in ["hypothesis", "hypothesis.extra.numpy", "torch"] + [
        m.name for m in pkgutil.walk_packages(_pytest.__path__, "_pytest.")]:
    try:
        importlib.import_module(name)
    except Exception:
        pass
from importlib.metadata import entry_points
for ep in entry_points(group="pytest11"):  # the plugins every pytest run loads
    try:
        ep.load()
    except Exception:
        pass
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        rc = 3
        try:
            os.setsid()  # its own process group: a timeout kills pytest's subprocesses too
            fd = os.open(req["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            rc = int(pytest.main(req["args"]))
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(rc)
    status = None
    while time.perf_counter() - start < req["timeout"]:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
        time.sleep(0.01)
    if status is None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    rc = None if status is None else os.waitstatus_to_exitcode(status)
    print(json.dumps({"rc": rc, "seconds": time.perf_counter() - start}), flush=True)
"""


class Copy:
    """One copy of the repository and its test server."""

    def __init__(self, path: Path):
        self.path = path
        env = {**os.environ, "PYTHONPATH": str(path),
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "MINITORCH_ARTIFACTS": str(path / ".artifacts")}
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER], cwd=path, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert json.loads(self.proc.stdout.readline()).get("ready")
        self.deselect: list[str] = []

    def pytest(self, files: list[str], timeout: float, stop_first: bool = True,
               ) -> tuple[str, list[str], float]:
        """('passed'|'failed'|'error'|'timeout', failing test ids, seconds)."""
        out = self.path / ".pytest_out.txt"
        args = ["-q", "-p", "no:cacheprovider", "-W", "ignore", "-rfE", "--no-header",
                *(["-x"] if stop_first else []), *files]
        for nodeid in self.deselect:
            args += ["--deselect", nodeid]
        self.proc.stdin.write(json.dumps({"args": args, "out": str(out), "timeout": timeout})
                              + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        if reply["rc"] is None:
            return "timeout", [], reply["seconds"]
        if reply["rc"] == 0:
            return "passed", [], reply["seconds"]
        text = out.read_text(errors="replace") if out.exists() else ""
        failing = re.findall(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", text, re.M)
        if not failing:
            tail = text.strip().splitlines()[-1:] or [f"pytest exit code {reply['rc']}"]
            failing = [tail[0][:200]]
        return ("failed" if reply["rc"] == 1 else "error"), failing, reply["seconds"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


ACTIVE_STAGES: list[str] | None = None  # --stages: run only these (exploration)


def stage_files(copy_dir: Path) -> list[tuple[str, list[str]]]:
    """(stage, files present in the copy + the stage's extra pytest args)."""
    return [(name, [f for f in files if (copy_dir / f.split("::")[0]).exists()] + extra)
            for name, files, extra in STAGES if ACTIVE_STAGES is None or name in ACTIVE_STAGES]


def _write(path: Path, text: str) -> None:
    """Write a source file of the copy and drop its bytecode, so the next import compiles this
    text (a .pyc is validated by mtime in seconds and size, which a mutant can share)."""
    path.write_text(text)
    Path(importlib.util.cache_from_source(str(path))).unlink(missing_ok=True)


def run_mutant(m: Mutant, c: Copy, original: dict[str, str], timeout: float) -> None:
    """Write the mutant into the copy, run the stages until one fails, restore the file."""
    path = c.path / m.file
    _write(path, mutated_source(original[m.file], m.function, m.node, m.edit))
    try:
        total = 0.0
        m.status = "survived"
        stages = stage_files(c.path)
        if m.key in EQUIVALENT and len(stages) > 1:
            stages = stages[:-1]
        for stage, files in stages:
            if not any(".py" in f for f in files):
                continue
            m.stages_run.append(stage)
            result, failing, secs = c.pytest(files, timeout * STAGE_TIMEOUT.get(stage, 1.0))
            total += secs
            if result != "passed":
                m.status, m.stage, m.killed_by = "killed", stage, (failing or [None])[0]
                m.how = {"failed": "test failure", "error": "collection error",
                         "timeout": f"timeout after {timeout:.0f} s"}[result]
                break
        m.seconds = round(total, 2)
    finally:
        _write(path, original[m.file])
    m.equivalent = EQUIVALENT.get(m.key) if m.status == "survived" else None


def baseline(c: Copy, timeout: float) -> dict[str, list[str]]:
    """Run every stage on the unmutated copy; the tests that fail there (known bugs being fixed)
    are deselected for the mutants and listed in the artifact. Returns {stage: failing ids}."""
    failing: dict[str, list[str]] = {}
    for stage, files in stage_files(c.path):
        if not any(".py" in f for f in files):
            continue
        result, ids, _ = c.pytest(files, timeout * STAGE_TIMEOUT.get(stage, 1.0),
                                  stop_first=False)
        if result == "timeout" or result == "error" and not any("::" in i for i in ids):
            raise RuntimeError(f"unmutated copy: stage {stage!r} {result}: {ids}")
        if ids:
            failing[stage] = ids
    return failing


# ---- driver ------------------------------------------------------------------------------------
def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def run(mutants: list[Mutant], copies: list[Copy], timeout: float) -> None:
    """Run the mutants on the copies, one worker per copy."""
    free: queue.Queue[Copy] = queue.Queue()
    for c in copies:
        free.put(c)
    original = {rel: (copies[0].path / rel).read_text() for rel in TARGETS
                if (copies[0].path / rel).exists()}

    def one(m: Mutant) -> None:
        c = free.get()
        try:
            run_mutant(m, c, original, timeout)
        finally:
            free.put(c)
        tag = m.killed_by or ("equivalent" if m.equivalent else "-")
        print(f"{m.status:>9} [{m.stage or '-'}] {m.key}  ({tag})", flush=True)

    with ThreadPoolExecutor(len(copies)) as pool:
        list(pool.map(one, mutants))


def summary(mutants: list[Mutant]) -> dict:
    killed = sum(m.status == "killed" for m in mutants)
    survived = [m for m in mutants if m.status == "survived"]
    equivalent = sum(m.equivalent is not None for m in survived)
    table: dict[str, dict] = {}
    for m in mutants:
        row = table.setdefault(f"{_short(m.file)}:{m.function}",
                               {"killed": 0, "survived": 0, "equivalent": 0})
        if m.status == "killed":
            row["killed"] += 1
        elif m.equivalent:
            row["equivalent"] += 1
        elif m.status == "survived":
            row["survived"] += 1
    wrong = [m.key for m in mutants if m.status == "killed" and m.key in EQUIVALENT]
    return {"total": len(mutants), "killed": killed, "survived": len(survived),
            "listed_equivalent_but_killed": wrong,
            "equivalent": equivalent, "survived_not_equivalent": len(survived) - equivalent,
            "timeouts": sum(bool(m.how and m.how.startswith("timeout")) for m in mutants),
            "by_function": table}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", default="HEAD", help="commit to copy, or WORKTREE (default HEAD)")
    ap.add_argument("--only", help="comma-separated file:function, file or mutant keys")
    ap.add_argument("--overlay", action="append", default=[],
                    help="a file copied from the working tree over the revision (repeatable)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds per stage per mutant")
    ap.add_argument("--list", action="store_true", help="print the mutants and exit")
    ap.add_argument("--out", default="mutation_engine.json", help="artifact file name")
    ap.add_argument("--reuse", metavar="JSON", help="a previous mutation_engine.json: its "
                    "'killed' results are reused for mutants whose function is unchanged (as "
                    "mutmut caches by function); survivors always run again")
    ap.add_argument("--stages", help="comma-separated stage names to run (default: all); a "
                    "partial run is for exploring, its survivors are not final")
    args = ap.parse_args(argv)
    global ACTIVE_STAGES
    ACTIVE_STAGES = args.stages.split(",") if args.stages else None
    only = set(args.only.split(",")) if args.only else None
    began = time.perf_counter()
    commit = git("rev-parse", args.rev) if args.rev != "WORKTREE" else git("rev-parse", "HEAD")
    with tempfile.TemporaryDirectory(prefix="mt_mutate_engine_") as tmp:
        dirs = [Path(tmp) / f"copy{i}" for i in range(max(args.jobs, 1))]
        overlaid = [make_copy(d, args.rev, args.overlay) for d in dirs][0]
        mutants = all_mutants(dirs[0], only)
        if args.list:
            for m in mutants:
                print(f"{m.file}:{m.line}  {m.key}")
            print(f"{len(mutants)} mutants")
            return 0
        stale = stale_equivalents(mutants) if not only else []
        reused = reuse(mutants, args.reuse) if args.reuse else 0
        todo = [m for m in mutants if m.reused_from is None]
        copies = [Copy(d) for d in dirs]
        try:
            known = baseline(copies[0], args.timeout * 3)
            for c in copies:
                c.deselect = [i for ids in known.values() for i in ids]
            if known:
                print(f"failing on the unmutated copy (deselected): {known}", flush=True)
            run(todo, copies, args.timeout)
        finally:
            for c in copies:
                c.close()
    info = summary(mutants)
    payload = {
        "command": shlex.join(["python", "-m", "verification.mutate_engine",
                               *(sys.argv[1:] if argv is None else argv)]),
        "rev": args.rev, "commit": commit, "overlaid_from_worktree": overlaid,
        "finished": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "seconds": round(time.perf_counter() - began, 1),
        "targets": {k: list(v) if v else "all functions" for k, v in TARGETS.items()},
        "stages": [{"name": n, "files": f, "args": a} for n, f, a in STAGES
                   if ACTIVE_STAGES is None or n in ACTIVE_STAGES],
        "failing_unmutated": known,
        **info, "stale_equivalents": stale, "reused_killed": reused,
        "mutants": [{k: v for k, v in asdict(m).items() if k not in ("node", "edit", "extra")}
                    for m in mutants],
    }
    from artifacts import write_json

    path = write_json(args.out, payload)
    print(f"total {info['total']}: {info['killed']} killed, {info['survived']} survived "
          f"({info['equivalent']} listed equivalent, {info['survived_not_equivalent']} not), "
          f"{info['timeouts']} timeouts; wrote {path}")
    for m in mutants:
        if m.status == "survived" and not m.equivalent:
            print(f"  SURVIVED {m.file}:{m.line} {m.key}")
    for key in stale:
        print(f"  stale EQUIVALENT entry (no such mutant now): {key}")
    for key in info["listed_equivalent_but_killed"]:
        print(f"  EQUIVALENT entry whose mutant was killed (its reason is wrong): {key}")
    return 0 if info["survived_not_equivalent"] == 0 else 1


def reuse(mutants: list[Mutant], path: str) -> int:
    """Take 'killed' results from an earlier run for mutants whose function is unchanged."""
    old = json.loads(Path(path).read_text())
    rows = {(r["key"], r.get("function_sha")): r for r in old.get("mutants", [])
            if r.get("status") == "killed" and r.get("function_sha")}
    n = 0
    for m in mutants:
        r = rows.get((m.key, m.function_sha))
        if r is not None:
            m.status, m.how, m.stage, m.killed_by = "killed", r["how"], r["stage"], r["killed_by"]
            m.seconds, m.stages_run = r["seconds"], r.get("stages_run", [])
            m.reused_from = r.get("reused_from") or old.get("commit")
            n += 1
    return n


def stale_equivalents(mutants: list[Mutant]) -> list[str]:
    """EQUIVALENT keys that match no generated mutant (the code they describe has changed)."""
    keys = {m.key for m in mutants}
    return sorted(k for k in EQUIVALENT if k not in keys)


if __name__ == "__main__":
    sys.exit(main())
