"""torch.nn.parallel: DistributedDataParallel over torch.distributed (MPI), and DataParallel,
which on a CPU-only machine calls the module as torch's does. Gradients are averaged during
backward: each bucket's non-blocking allreduce starts as soon as its last gradient lands."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ..distributed.distributed_c10d import caller, default_pg
from ..engine import Context, graph, runtime
from .module import Module

FIRST_BUCKET_MB = 1.0  # torch's first bucket is small so that communication starts early


class DistributedDataParallel(Module):
    """torch's DDP: wraps `module`; every rank starts from rank 0's parameters and buffers, and
    after each backward every rank holds the gradients averaged over ranks.

    How: the forward counts, on its output's graph, how many gradients each parameter will
    receive; during backward the engine hands leaf gradients to this wrapper (the thread's
    gradient sink, engine/runtime.py), which adds each to `.grad` and, when a bucket's last
    parameter is complete, divides the bucket by the world size and starts its MPI Iallreduce
    (buckets in reverse parameter order, the order backward finishes them; started strictly in
    that order so every rank issues the same sequence). The last gradient waits for them all.
    Open MPI progresses a non-blocking collective while this process calls into MPI, so overlap
    with the rest of backward is partial. Ordinary backward (no DDP) is untouched.

    Args:
        module: the model (its parameters: any shapes, float dtypes).
        device_ids, output_device: accepted as torch's (CPU only: None or [0]-like lists).
        broadcast_buffers: also broadcast rank 0's buffers at construction (torch re-sends
            them before each forward; here they are sent once: buffers that a forward changes
            differently per rank are not re-synced).
        bucket_cap_mb: bucket size (torch's 25 MB).
        find_unused_parameters: parameters the forward's graph does not reach are reduced as
            zero (and stay None where no rank used them); without it such a parameter is an
            error at that forward (torch reports it at the next one).
        process_group: None or the world group (the only one).
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False, **kw):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be an nn.Module, got "
                            f"{type(module).__name__}")
        self.pg = default_pg() if process_group is None else process_group
        if self.pg is not default_pg():
            raise ValueError("DistributedDataParallel: only the default (world) process group "
                             "exists in minitorch")
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = broadcast_buffers
        self._ddp_params = [p for p in module.parameters() if p.requires_grad]
        cap = 25.0 if bucket_cap_mb is None else float(bucket_cap_mb)
        self._buckets = _buckets(self._ddp_params, cap)
        self._reducer: _Reducer | None = None
        shapes = ";".join(f"{tuple(p.shape)}:{p.dtype}" for p in module.parameters())
        self.pg.agree(f"DistributedDataParallel(parameters={len(module.parameters())}, "
                      f"layout crc={_crc(shapes)})", caller())
        w = self.pg.world
        if w.size > 1:  # every rank starts from rank 0's weights
            w.sync_params([*module.parameters(), *(module.buffers() if broadcast_buffers
                                                   else [])])

    def forward(self, *inputs, **kwargs):
        if self._reducer is not None:
            self._reducer.abandon()
        out = self.module(*inputs, **kwargs)
        if (self.require_backward_grad_sync and self.pg.world.size > 1
                and runtime.is_grad_enabled() and self._ddp_params):
            self._reducer = _Reducer(self, _uses(out, self._ddp_params))
        return out

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Within this block backward accumulates gradients locally (no communication); the
        first backward after it averages the accumulated gradients."""
        prev, self.require_backward_grad_sync = self.require_backward_grad_sync, False
        try:
            yield
        finally:
            self.require_backward_grad_sync = prev


class _Bucket:
    """Parameters reduced together: one flat buffer of their dtype."""

    def __init__(self, params: list):
        self.params = params
        self.size = sum(p.data.size for p in params)
        self.buf = np.empty(self.size, dtype=params[0].data.dtype)


def _buckets(params: list, cap_mb: float) -> list[_Bucket]:
    """Parameters in reverse order (backward's), split by dtype and size: the first bucket of
    FIRST_BUCKET_MB, the others of cap_mb."""
    out: list[_Bucket] = []
    open_: dict = {}
    for p in reversed(params):
        dt = np.dtype(p.data.dtype)
        cur = open_.setdefault(dt, [])
        cur.append(p)
        limit = (FIRST_BUCKET_MB if not out else cap_mb) * 2**20
        if sum(q.data.nbytes for q in cur) >= limit:
            out.append(_Bucket(cur))
            open_[dt] = []
    out.extend(_Bucket(cur) for cur in open_.values() if cur)
    return out


def _crc(text: str) -> str:
    import zlib

    return f"{zlib.crc32(text.encode()):08x}"


def _uses(out, params: list) -> dict[int, int]:
    """{id(param): the number of gradients backward from `out` will hand it} (0: unreached)."""
    counts = {id(p): 0 for p in params}
    roots = [t._ctx for t in _tensors(out) if getattr(t, "_ctx", None) is not None]
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen:
            continue
        for node in graph.toposort(root):
            if id(node) in seen:
                continue
            seen.add(id(node))
            for parent, needed in zip(node.parents, node.needs_grad):
                if needed and not isinstance(parent, Context) and id(parent) in counts:
                    counts[id(parent)] += 1
    return counts


def _tensors(out) -> Iterator:
    """The tensors in a forward's output (a tensor, or tuples, lists and dicts of them)."""
    if isinstance(out, (list, tuple)):
        for o in out:
            yield from _tensors(o)
    elif isinstance(out, dict):
        for o in out.values():
            yield from _tensors(o)
    elif hasattr(out, "_ctx"):
        yield out


class _Reducer:
    """One backward's gradient averaging: the thread's gradient sink until every bucket is
    reduced (engine/runtime.grads_into's protocol: accumulate(leaf, grad))."""

    def __init__(self, ddp: DistributedDataParallel, counts: dict[int, int]):
        self.ddp, self.world = ddp, ddp.pg.world
        unused = [n for n, p in ddp.module.named_parameters()
                  if p.requires_grad and counts[id(p)] == 0]
        if unused and not ddp.find_unused_parameters:
            raise RuntimeError(
                "DistributedDataParallel: the forward's output does not depend on parameter(s) "
                f"{', '.join(unused[:5])}{' ...' if len(unused) > 5 else ''}; pass "
                "find_unused_parameters=True to DistributedDataParallel")
        self.initial, self.left = counts, dict(counts)  # gradients still to come per parameter
        self.used = {k for k, v in counts.items() if v}
        self.bucket_of = {id(p): i for i, b in enumerate(ddp._buckets) for p in b.params}
        self.waiting = [sum(1 for p in b.params if self.left[id(p)]) for b in ddp._buckets]
        self.requests: list = []
        self.started = 0  # buckets launched, in order
        self.checked = False
        self.prev = runtime.local.grad_sink
        runtime.local.grad_sink = self
        self._launch_ready()  # buckets of unused parameters only

    def accumulate(self, leaf, grad: np.ndarray) -> None:
        key = id(leaf)
        if key not in self.left:
            if self.prev is None:
                leaf.accumulate_grad(grad)
            else:
                self.prev.accumulate(leaf, grad)
            return
        if self.left[key] == 0:
            self._uninstall()
            raise RuntimeError("DistributedDataParallel: a parameter received a gradient after "
                               "its bucket was reduced (it is used outside the DDP forward, or "
                               "backward ran twice through one forward)")
        leaf.accumulate_grad(grad)
        self.left[key] -= 1
        if self.left[key] == 0:
            self.waiting[self.bucket_of[key]] -= 1
            self._launch_ready()

    def _launch_ready(self) -> None:
        buckets = self.ddp._buckets
        while self.started < len(buckets) and self.waiting[self.started] == 0:
            if not self.checked:  # once per backward: every rank is reducing the same model
                self.ddp.pg.agree(f"DistributedDataParallel backward ({len(buckets)} buckets)",
                                  caller())
                self.checked = True
            self._start(buckets[self.started])
            self.started += 1
        for req in self.requests:  # lets MPI progress the ones in flight
            req.Test()
        if self.started == len(buckets):
            self._finish()

    def _start(self, b: _Bucket) -> None:
        off = 0
        for p in b.params:
            dst = b.buf[off:off + p.data.size]
            if p.grad is None:  # unused here: contributes zero
                dst[...] = 0
            else:
                np.divide(p.grad.data.reshape(-1), self.world.size, out=dst)
            off += p.data.size
        MPI = self.world.MPI
        self.requests.append(self.world.comm.Iallreduce(MPI.IN_PLACE, b.buf, op=MPI.SUM))

    def _finish(self) -> None:
        self._uninstall()
        self.world.MPI.Request.Waitall(self.requests)
        globally_used = self._globally_used()
        for b in self.ddp._buckets:
            off = 0
            for p in b.params:
                src = b.buf[off:off + p.data.size].reshape(p.data.shape)
                off += p.data.size
                if p.grad is not None and p.grad.data.flags.writeable:
                    np.copyto(p.grad.data, src)
                elif p.grad is not None:
                    p.grad.data = src.copy()
                elif id(p) in globally_used:
                    p.accumulate_grad(src)

    def _globally_used(self) -> set[int]:
        """The parameters some rank used (find_unused_parameters only: one small allreduce)."""
        if not self.ddp.find_unused_parameters:
            return self.used
        flags = np.array([id(p) in self.used for p in self.ddp._ddp_params], dtype=np.int32)
        self.world.comm.Allreduce(self.world.MPI.IN_PLACE, flags, op=self.world.MPI.MAX)
        return {id(p) for p, f in zip(self.ddp._ddp_params, flags) if f}

    def _uninstall(self) -> None:
        if runtime.local.grad_sink is self:
            runtime.local.grad_sink = self.prev
        self.ddp._reducer = None

    def abandon(self) -> None:
        """A new forward before this backward completed: harmless if backward never began (an
        evaluation forward with grad enabled), else torch's error."""
        self._uninstall()
        self.world.MPI.Request.Waitall(self.requests)  # buckets of unused parameters, if any
        if self.left != self.initial:
            raise RuntimeError(
                "DistributedDataParallel: expected to have finished reduction in the prior "
                "iteration before starting a new one: the last backward did not reach every "
                "parameter the forward used")


class DataParallel(Module):
    """torch's DataParallel on a machine without GPUs: forward calls the module."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module, self.device_ids, self.output_device, self.dim = (module, device_ids,
                                                                      output_device, dim)

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
