"""Captured-step replay: record the ops of one forward + backward of a loss function, then run
that op sequence again on new inputs of the same shapes without building a graph.

Replay calls the same op forwards and vjps in the same order, and sums gradients in the same
order, as eager `fn(*inputs).backward()`, so its results are bit-identical to eager; what it
skips is the bookkeeping around them: Tensor and graph objects, the toposort, the saved-array
locks (no user code runs between its forward and its backward), hooks and shape checks (done
once, at capture). It follows the ops, fn's inputs, NumPy views of inputs and of op outputs
(as op inputs or inside attributes, e.g. an index an earlier op computed); like any tracer it
cannot follow Python: values turned into Python numbers, control flow on them, copies fn
makes of its inputs outside ops and module attributes replaced after capture are fixed at
capture; the eager check (`verify_every`) catches them when it runs, at the first replay of a
capture and every verify_every-th after, and raises before applying that step's gradients,
dropping the capture (the next call captures again: a failed check is never replayed).
Array inputs are first converted to the dtype a Tensor would hold them in (token ids of any
integer dtype become int64), so fn's own Tensor(x) is no copy.
The inputs' shapes, dtypes and strides, the grad mode and the leaves' shapes, dtypes and
requires_grad are checked at every call; any change captures again (or raises, strict=True).
A call with an input that requires grad runs eagerly (the tape gives gradients to leaves).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from .engine import Tensor, graph, runtime
from .engine.node import Context
from .engine.pool import Pool
from .engine.registry import Op

_NODE, _LEAF, _INPUT = 0, 1, 2  # where an op input comes from: a taped op, a tensor, fn's input


class _Bare(Context):
    """A replay node: saves without locking (forward and backward run back to back)."""

    def save(self, *arrays: Any) -> None:
        if self.recording:
            self.saved = arrays


@dataclass(frozen=True)
class _Slot:
    """In a taped attribute: the array to put here at replay, (_NODE | _INPUT, index, view)."""

    source: tuple


def _has_slot(value: Any) -> bool:
    if isinstance(value, _Slot):
        return True
    return isinstance(value, (tuple, list)) and any(_has_slot(v) for v in value)


def _slot_sources(value: Any):
    if isinstance(value, _Slot):
        yield value.source
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _slot_sources(v)


@dataclass
class _Entry:
    op: type[Op]
    attrs: dict
    sources: list  # per input: (_NODE, tape index, view) | (_LEAF, tensor) | (_INPUT, k, view);
    #   view: None (the array itself) or (offset, shape, strides) of a NumPy view taken of it
    needs: tuple[bool, ...]
    in_shapes: list  # per input, the shape its gradient is reduced to
    frees: list[int]  # tape indices whose outputs no later op reads (dropped after this one)
    slotted: bool = False  # some attribute holds a _Slot (filled at every replay)


class _Recorder:
    """Collects the ops of one eager run (runtime.recording) into a tape."""

    def __init__(self, inputs: tuple):
        self.inputs = inputs
        self.entries: list[_Entry] = []
        # id(output tensor), id(its array) -> (weak reference, tape index): weak, so capture
        # frees what eager frees (the reference tells a live object from a reused id)
        self.index: dict[int, tuple[weakref.ref, int]] = {}
        # by tape index, the array owning the memory of each taped op's output (a NumPy view
        # of the output keeps that owner alive, not the output array itself)
        self.outs: list[weakref.ref] = []
        self.nodes: dict[int, int] = {}  # id(graph Context) -> tape index

    def _taped(self, obj: Any) -> int | None:
        hit = self.index.get(id(obj))
        return hit[1] if hit is not None and hit[0]() is obj else None

    def record(self, op, inputs, attrs, node, out) -> None:
        sources, shapes = [], []
        needs = node.needs_grad if node is not None else (False,) * len(inputs)
        for t, needed in zip(inputs, needs):
            shapes.append(t.shape)
            j = self._taped(t)  # the tensor, or a new Tensor around a taped op's output array
            if j is None:
                j = self._taped(t.data)
                if j is not None and needed:  # a new leaf (eager stops its gradient there)
                    raise ValueError(f"replay: op '{op.name}' reads a tensor that requires grad "
                                     "and shares an op's output array; do that with ops")
            if j is not None:
                sources.append((_NODE, j, None))
            else:
                sources.append(self._outside(op, t))
        # arrays inside attributes (an index computed by an earlier op, or taken from an input)
        # become slots filled afresh at every replay; other values are kept as captured
        attrs = {name: self._slots(op, name, value) for name, value in attrs.items()}
        i = len(self.entries)
        self.entries.append(_Entry(op, attrs, sources, needs, shapes, [],
                                   any(_has_slot(v) for v in attrs.values())))
        self.index[id(out)] = (weakref.ref(out), i)
        self.index[id(out.data)] = (weakref.ref(out.data), i)
        self.outs.append(weakref.ref(_root(out.data)))
        if node is not None:
            self.nodes[id(node)] = i

    def _outside(self, op, t: Tensor) -> tuple:
        """The source of a tensor no taped op produced: fn's input (or a NumPy view of one), or
        a leaf or constant read at every replay (parameters: the optimizer's updates show)."""
        for k, x in enumerate(self.inputs):
            if t is x:
                return (_INPUT, k, None)
        if t.requires_grad and self._input_of(t.data) is None:
            return (_LEAF, t)  # a parameter (its memory may also lie under a taped op's view)
        source = self._derived(op, t.data, "an input")
        if source is None:
            return (_LEAF, t)
        if t.requires_grad:
            raise ValueError(f"replay: op '{op.name}' reads a tensor that requires grad and is "
                             "made outside minitorch ops from fn's input or an op's output; "
                             "do that with ops")
        return source

    def _derived(self, op, a: np.ndarray, what: str) -> tuple | None:
        """(_INPUT, k, view) or (_NODE, j, view) when array `a` is fn's input k or taped op j's
        output or a NumPy view of one (the latest op whose memory it shares); None when it is
        neither (a constant)."""
        for k, x in enumerate(self.inputs):
            if a is _array(x):
                return (_INPUT, k, None)
        j = self._taped(a)
        if j is not None:
            return (_NODE, j, None)
        k = self._input_of(a)
        if k is not None:
            kind, base = _INPUT, _array(self.inputs[k])
        else:
            k = next((j for j in reversed(range(len(self.outs)))
                      if self.outs[j]() is not None and np.may_share_memory(a, self.outs[j]())),
                     None)
            if k is None:
                return None
            kind, base = _NODE, self.outs[k]()
        offset = a.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        if base.dtype != a.dtype or (offset and not base.flags.c_contiguous):
            raise ValueError(f"replay: op '{op.name}' reads {what} derived from fn's inputs or "
                             "an op's output by more than a NumPy view; do that step with "
                             "minitorch ops")
        return (kind, k, (offset // base.itemsize, a.shape, a.strides))

    def _slots(self, op, name: str, value: Any) -> Any:
        """An attribute with each array made from an input or an op's output replaced by a
        _Slot naming where to read it at replay."""
        if isinstance(value, np.ndarray):
            source = self._derived(op, value, f"attribute {name!r}")
            return value if source is None else _Slot(source)
        if isinstance(value, (tuple, list)):
            return type(value)(self._slots(op, name, v) for v in value)
        return value

    def _input_of(self, a: np.ndarray) -> int | None:
        for k, x in enumerate(self.inputs):
            if np.may_share_memory(a, _array(x)):
                return k
        return None


class _Held:
    """Leaf gradients kept aside, in arrival order (engine/runtime.grads_into). Copies: the
    step's own arrays are free again when the step ends, as in a run that is not checked, so
    the memory plan holds for this run too."""

    def __init__(self) -> None:
        self.grads: list[tuple[Tensor, np.ndarray]] = []

    def accumulate(self, leaf: Tensor, grad: np.ndarray) -> None:
        self.grads.append((leaf, grad.copy()))


class _Tape:
    """One captured forward + backward: run it on new inputs of the captured signature."""

    def __init__(self, rec: _Recorder, loss: Tensor, pool: Pool | None):
        self.entries = rec.entries
        self.root = rec._taped(loss)
        order = graph.toposort(loss._ctx)  # the order eager backward takes (same algorithm)
        outside = [node.op.name for node in order if id(node) not in rec.nodes]
        if outside:
            raise ValueError(f"replay: the loss depends on a graph built before fn ran (op "
                             f"'{outside[0]}'); build the whole step inside fn")
        self.order = [rec.nodes[id(node)] for node in reversed(order)]
        last_use: dict[int, int] = {}
        for i, e in enumerate(self.entries):
            for src in [*e.sources, *(s for v in e.attrs.values() for s in _slot_sources(v))]:
                if src[0] == _NODE:
                    last_use[src[1]] = i
        for j, i in last_use.items():
            if j != self.root:
                self.entries[i].frees.append(j)
        # a constant sharing a parameter's array (p.detach()) is read through the parameter,
        # so a `p.data = ...` between calls shows in both (its input needs no gradient)
        params = {id(src[1].data): src[1] for e in self.entries for src in e.sources
                  if src[0] == _LEAF and src[1].requires_grad}
        for e in self.entries:
            e.sources = [(_LEAF, params.get(id(src[1].data), src[1])) if src[0] == _LEAF
                         else src for src in e.sources]
        # every leaf and constant read, with what the tape assumed of it: a leaf that starts
        # (or stops) requiring grad has no (or a stale) gradient path, so it captures again
        self.leaves = list({id(src[1]): src[1] for e in self.entries for src in e.sources
                            if src[0] == _LEAF}.values())
        self.leaf_specs = [_leaf_spec(p) for p in self.leaves]
        self.replays = 0
        self.pool = pool  # the memory plan (engine/pool.py), recorded by the first replay

    def run(self, inputs: tuple, seed: float) -> float:
        with self.pool.active() if self.pool is not None else nullcontext():
            return self._run(inputs, seed)

    def _run(self, inputs: tuple, seed: float) -> float:
        entries = self.entries
        outs: list[Any] = [None] * len(entries)
        nodes: list[Any] = [None] * len(entries)
        arrays = [_array(x) for x in inputs]
        for i, e in enumerate(entries):
            outs[i], nodes[i] = _forward(e, outs, arrays)
            for j in e.frees:
                outs[j] = None
        loss = outs[self.root]
        value = loss.item()
        pending = {self.root: np.full(loss.shape, seed, dtype=loss.dtype)}
        del outs, loss
        for i in self.order:
            _backprop(entries[i], nodes, i, pending)
        return value


# One step each, in its own frame: nothing it touched (an op's inputs, a gradient) outlives it
# in a loop variable, so arrays are freed when eager frees them and a pending gradient that
# only the engine holds is seen as such (graph.exclusive).
def _forward(e: _Entry, outs: list, arrays: list) -> tuple[np.ndarray, _Bare]:
    """Run taped op e's forward on this replay's arrays: (its output, its node)."""
    args = [src[1].data if src[0] == _LEAF else _read(src, outs, arrays) for src in e.sources]
    attrs = e.attrs
    if e.slotted:
        attrs = {k: _fill(v, outs, arrays) for k, v in attrs.items()}
    ctx = _Bare(e.op, (), e.needs)
    return np.asarray(e.op.forward(ctx, *args, **attrs)), ctx


def _backprop(e: _Entry, nodes: list, i: int, pending: dict) -> None:
    """Run taped op e's vjp on its pending gradient (tape index i) and route the results."""
    grad_out = pending.pop(i, None)
    ctx, nodes[i] = nodes[i], None
    if grad_out is None:
        return
    ctx.grad_out_writable = graph.exclusive(grad_out)  # (the seed too: run made it)
    grads = e.op.vjp(ctx, grad_out)
    for src, grad, needed, shape in zip(e.sources, grads, e.needs, e.in_shapes):
        if not needed:
            continue
        grad = np.asarray(graph.unbroadcast(grad, shape))
        if src[0] == _LEAF:
            graph._accumulate_leaf(src[1], grad)
        else:
            graph.add_pending(pending, src[1], grad)


class Replay:
    """Run `fn(*inputs)` forward and backward, replaying the captured op sequence after the
    first call with a given signature.

    Args:
        strict: raise ValueError naming the change when a call's signature differs from the
            captured one, instead of capturing again.
        verify_every: also run fn's forward eagerly (without a graph) at the first replay of
            each tape and then every this many replays, and raise RuntimeError if its loss is
            not bit-identical to the replayed one: it catches a fn that reads something replay
            cannot see (a batch from a closure instead of an input). 0 = never.

    Usage: `loss = Replay().backward(lambda x, y: model(x, y)[1], x, y)` in place of
    `loss = model(x, y)[1]; loss.backward()` (returns the loss as a float). `fn` must return
    a one-element loss Tensor; it must run the same ops for inputs of the same shapes.
    """

    MAX_TAPES = 8  # signatures kept (e.g. the last, shorter batch of an epoch)

    def __init__(self, strict: bool = False, verify_every: int = 100):
        if not isinstance(verify_every, int) or verify_every < 0:
            raise ValueError(f"Replay: verify_every must be an int >= 0, got {verify_every!r}")
        self.strict, self.verify_every = strict, verify_every
        self.tapes: dict[tuple, _Tape] = {}
        self.captures = 0

    def backward(self, fn: Callable[..., Tensor], *inputs: Any, scale: float = 1.0,
                 step: Callable[[], Any] | None = None) -> float:
        """Forward and backward of fn(*inputs), the loss's gradient seeded with `scale`; adds
        to every leaf's .grad as `fn(*inputs).backward()` does. Returns the loss. fn receives
        array inputs in the dtype a Tensor holds them in (uint8 ids as int64), so NumPy
        arithmetic fn does on them outside ops follows that dtype (no uint8 wraparound).
        `step` (an optimizer's step) is called once the gradients are in .grad, with the free
        memory of the step's plan lent to its temporaries (engine/pool.py): they then add
        nothing beside it."""
        inputs = tuple(_as_held(x) for x in inputs)
        value, tape = self._backward(fn, inputs, scale)
        if step is not None:
            with tape.pool.lending() if tape is not None and tape.pool else nullcontext():
                step()
        return value

    def _backward(self, fn: Callable[..., Tensor], inputs: tuple,
                  scale: float) -> tuple[float, _Tape | None]:
        """backward's loss, and the tape it ran or captured (None when it ran eagerly)."""
        if runtime.anomaly_enabled or runtime.forward_hooks or runtime.backward_hooks:
            return eager_backward(fn, inputs, scale), None  # hooks see Tensors and nodes
        if any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
            return eager_backward(fn, inputs, scale), None  # the tape gives leaves gradients
        key = _signature(inputs)
        tape = self.tapes.get(key)
        if tape is not None and all(_leaf_spec(p) == spec
                                    for p, spec in zip(tape.leaves, tape.leaf_specs)):
            if not (self.verify_every and tape.replays % self.verify_every == 0):
                tape.replays += 1
                return tape.run(inputs, scale), tape
            held = _Held()  # the gradients reach .grad only once the loss is confirmed
            with runtime.grads_into(held):
                value = tape.run(inputs, scale)
            tape.replays += 1
            with runtime.no_grad(), tape.pool.lending() if tape.pool else nullcontext():
                expected = _checked(fn(*inputs)).item()  # in the plan's memory, free by now
            if not (value == expected or (value != value and expected != expected)):
                # the tape is stale: drop it, so no later call replays it unchecked (the next
                # call with this signature captures afresh and is checked at its first replay)
                del self.tapes[key]
                raise RuntimeError(
                    f"replay: the replayed loss {value!r} differs from eager's {expected!r} (no "
                    "gradient was applied): fn reads something replay cannot see, e.g. a batch "
                    "from a closure instead of an input, an input converted outside ops "
                    "(x.astype(np.float64)), a value turned into a Python number, or a module "
                    "attribute replaced since capture")
            for leaf, grad in held.grads:
                graph._accumulate_leaf(leaf, grad)  # in the order backward gave them
            return value, tape
        if self.strict and self.tapes:
            old = next(iter(self.tapes))
            raise ValueError(f"replay (strict): the step changed since capture: "
                             f"{_difference(old, key) if tape is None else 'a leaf'}")
        rec = _Recorder(inputs)
        # the memory plan: the step's large arrays laid out once, reused by every replay; only
        # where graph.exclusive's reference counts hold, which the plan's safety needs too.
        # The capture's arrays lie on pages of their own (no heap left behind); its record is
        # dropped, as the first replay's own is the plan's
        pool = Pool() if graph._TRUSTED else None
        with pool.active(plan=False) if pool is not None else nullcontext():
            with runtime.recording(rec):
                loss = _checked(fn(*inputs))
            if loss._ctx is None:
                raise RuntimeError("replay: the loss does not require grad (no graph to replay)")
            tape = _Tape(rec, loss, pool)
            del rec
            loss.backward(np.full(loss.shape, scale, dtype=loss.dtype))
        if len(self.tapes) >= self.MAX_TAPES:
            self.tapes.pop(next(iter(self.tapes)))
        self.tapes[key] = tape
        self.captures += 1
        return loss.item(), tape


def eager_backward(fn: Callable[..., Tensor], inputs: tuple, scale: float = 1.0) -> float:
    """`fn(*inputs).backward()` with the seed `scale`; returns the loss."""
    loss = _checked(fn(*inputs))
    loss.backward(np.full(loss.shape, scale, dtype=loss.dtype))
    return loss.item()


def _as_held(x: Any) -> Any:
    """An array input in the dtype a Tensor holds it in (any integer as int64, float16 as
    float32: the same values), so that a Tensor fn makes of it is the input itself, which replay
    follows, not a conversion copy made outside ops, which it could not (uint16 or int32 token
    ids). Other inputs are passed as given."""
    if isinstance(x, np.ndarray) and x.dtype.kind in "biuf":
        return Tensor(x).data
    return x


def _checked(loss: Any) -> Tensor:
    if not isinstance(loss, Tensor) or loss.data.size != 1:
        got = f"shape {loss.shape}" if isinstance(loss, Tensor) else type(loss).__name__
        raise TypeError(f"fn must return a one-element loss Tensor, got {got}")
    return loss


def _read(src: tuple, outs: list, arrays: list) -> np.ndarray:
    """This replay's array for a (_NODE | _INPUT, index, view) source."""
    if src[0] == _NODE:
        out = outs[src[1]]
        return out if src[2] is None else _view(_root(out), src[2])
    return _view(arrays[src[1]], src[2])


def _fill(value: Any, outs: list, arrays: list) -> Any:
    if isinstance(value, _Slot):
        return _read(value.source, outs, arrays)
    if isinstance(value, (tuple, list)):
        return type(value)(_fill(v, outs, arrays) for v in value)
    return value


def _root(a: np.ndarray) -> np.ndarray:
    """The array that owns a's memory (a itself, or the base its views collapse to)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _leaf_spec(t: Tensor) -> tuple:
    return t.data.shape, t.data.dtype, t.requires_grad


def _array(x: Any) -> np.ndarray:
    return x.data if isinstance(x, Tensor) else np.asarray(x)


def _signature(inputs: tuple) -> tuple:
    """What a tape depends on besides the leaves: each input's kind, shape, dtype, strides, and
    this thread's grad mode."""
    sig = []
    for x in inputs:
        a = _array(x)
        sig.append((isinstance(x, Tensor), a.shape, a.dtype.str, a.strides))
    return (runtime.local.grad_enabled, *sig)


def _difference(old: tuple, new: tuple) -> str:
    if old[0] != new[0]:
        return f"grad mode {old[0]} -> {new[0]}"
    if len(old) != len(new):
        return f"{len(old) - 1} inputs -> {len(new) - 1}"
    for k, (a, b) in enumerate(zip(old[1:], new[1:])):
        if a != b:
            return f"input {k}: shape {a[1]} dtype {a[2]} -> shape {b[1]} dtype {b[2]}"
    return "nothing visible"


def _view(base: np.ndarray, spec: tuple | None) -> np.ndarray:
    """The array itself, or the NumPy view of it taken at capture (same offset and strides)."""
    if spec is None:
        return base
    offset, shape, strides = spec
    start = base.reshape(-1)[offset:] if offset else base  # offsets only into contiguous arrays
    return np.lib.stride_tricks.as_strided(start, shape, strides, writeable=False)
