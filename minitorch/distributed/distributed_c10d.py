"""torch.distributed's process group and collectives over MPI (the world of .mpi): torch's names,
arguments and in-place results. Before each collective the ranks compare what they are calling
(name, shape, dtype, op, root) through rank 0 on a separate communicator, so a skipped or
mismatched call is an error naming both ranks' calls, and a missing rank one naming it after the
timeout, never a hang. mpi4py is imported only when a process group of several ranks is made.
"""

from __future__ import annotations

import datetime
import enum
import os
import sys
import time
import warnings
from typing import Any

import numpy as np

from ..engine import Tensor
from .mpi import Local, launched_by_mpi

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)  # torch's default_pg_timeout
_LIBRARY = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # minitorch/


class ReduceOp(enum.Enum):
    """torch.distributed.ReduceOp: how all_reduce and reduce_scatter combine the ranks' values."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7


class Backend(str):
    """torch.distributed.Backend: the backend names (a string, as torch's)."""

    GLOO = "gloo"
    MPI = "mpi"
    NCCL = "nccl"
    UNDEFINED = "undefined"


class DistError(RuntimeError):
    """A collective that cannot complete: mismatched calls across ranks, or a rank missing."""


class ProcessGroup:
    """The world group (every rank): what init_process_group makes. Only this group exists."""

    def __init__(self, world: Local, backend: str, timeout: datetime.timedelta):
        self.world, self.backend, self.timeout = world, backend, timeout
        self.calls = 0  # collectives called so far on this rank (the same on every rank)
        self._check = None if world.size == 1 else world.comm.Dup()  # for _agree only

    def rank(self) -> int:
        return self.world.rank

    def size(self) -> int:
        return self.world.size

    def agree(self, call: str, detail: str = "") -> None:
        """Every rank is making the same collective call `call`, or DistError (on every rank
        that can be told) naming each rank's call; a rank that does not come within the
        timeout is named. `detail` (the caller's file:line) is reported, not compared."""
        self.calls += 1
        if self.world.size == 1:
            return
        seconds = self.timeout.total_seconds()
        mine = f"{call}\0{detail}"
        if self.world.rank != 0:
            self._check.send(mine, dest=0, tag=1)
            # a little longer than rank 0 waits, so that rank 0 names the missing rank
            verdict = _wait(self._check.irecv(source=0, tag=2), seconds + 10)
            if verdict is _LATE:
                raise DistError(f"rank {self.world.rank}: {_show(mine)} (collective "
                                f"#{self.calls}): rank 0 did not answer within {seconds:g} s")
            if verdict:
                raise DistError(verdict)
            return
        reqs = {r: self._check.irecv(source=r, tag=1) for r in range(1, self.world.size)}
        calls = {0: mine, **_wait_all(reqs, seconds)}
        missing = [r for r in reqs if r not in calls]
        if missing:
            raise DistError(
                f"rank 0: {_show(mine)} (collective #{self.calls}): rank(s) "
                f"{', '.join(map(str, missing))} did not reach it within {seconds:g} s "
                "(stuck, died, or skipped a collective)")
        odd = [r for r, c in calls.items() if c.split("\0")[0] != call]
        verdict = "" if not odd else (
            f"collective #{self.calls} differs across ranks: "
            + "; ".join(f"rank {r} called {_show(c)}" for r, c in sorted(calls.items())
                        if r == 0 or r in odd))
        for r in reqs:
            self._check.send(verdict, dest=r, tag=2)
        if verdict:
            raise DistError(verdict)

    def free(self) -> None:
        if self._check is not None:
            self._check.Free()
            self._check = None


_LATE = object()


def _wait(req, seconds: float):
    """The message of `req` (an mpi4py irecv), or _LATE after `seconds`."""
    got = _wait_all({0: req}, seconds)
    return got[0] if got else _LATE


def _wait_all(reqs: dict, seconds: float) -> dict:
    """{key: message} of the mpi4py irecv requests `reqs` that complete within `seconds` (the
    others are cancelled)."""
    deadline, spins, got = time.monotonic() + seconds, 0, {}
    while len(got) < len(reqs):
        for k, req in reqs.items():
            if k not in got:
                done, msg = req.test()
                if done:
                    got[k] = msg
        if len(got) == len(reqs):
            break
        if time.monotonic() > deadline:
            for k, req in reqs.items():
                if k not in got:
                    req.Cancel()
            break
        spins += 1
        time.sleep(0 if spins < 2000 else 0.001)  # spin briefly, then stop hogging the core
    return got


def _show(call: str) -> str:
    name, _, where = call.partition("\0")
    return f"{name} at {where}" if where else name


def caller() -> str:
    """file:line of the innermost frame outside minitorch (the user's call)."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_LIBRARY):
        f = f.f_back
    return "?" if f is None else f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"


_PG: ProcessGroup | None = None


class _WorldMeta(type):
    @property
    def WORLD(cls) -> ProcessGroup | None:  # noqa: N802 - torch's name
        return _PG


class group(metaclass=_WorldMeta):  # noqa: N801 - torch's name
    """torch.distributed.group: group.WORLD is the default process group (None before init)."""


GroupMember = group


def is_available() -> bool:
    """True: torch.distributed works here (through MPI when there is more than one rank)."""
    return True


def is_initialized() -> bool:
    return _PG is not None


def is_mpi_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def is_gloo_available() -> bool:
    """True: 'gloo' is accepted (and runs over MPI)."""
    return True


def is_nccl_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return "TORCHELASTIC_RUN_ID" in os.environ


def _env_int(name: str) -> int | None:
    v = os.environ.get(name)
    if v is None:
        return None
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"environment variable {name}={v!r} is not an integer") from None


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """torch's init_process_group: join the world of this job's ranks.

    Args:
        backend: 'gloo' (default) or 'mpi'; both run over MPI. 'nccl' is refused (no GPU).
        init_method: 'env://' (default) or any URL torch takes; under MPI the rendezvous is
            MPI's own, so a tcp:// or file:// address is not used.
        timeout: how long a collective waits for the other ranks (torch's default, 30 min).
        world_size, rank: if given (or RANK/WORLD_SIZE are set), they must be the launcher's.
    """
    global _PG
    if _PG is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = (backend or "gloo").lower()
    if "nccl" in name and "gloo" not in name and "mpi" not in name:
        raise RuntimeError(f"init_process_group(backend={backend!r}): NCCL needs CUDA GPUs and "
                           "minitorch runs on the CPU; use backend='gloo' (or 'mpi')")
    if name.startswith("cpu:") or "," in name:  # 'cpu:gloo,cuda:nccl': the CPU entry
        parts = dict(p.split(":", 1) for p in name.split(",") if ":" in p)
        name = parts.get("cpu", "gloo")
    if name not in ("gloo", "mpi"):
        raise ValueError(f"init_process_group: unknown backend {backend!r} (minitorch has "
                         "'gloo' and 'mpi', both over MPI)")
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"init_process_group: timeout must be a datetime.timedelta, got "
                        f"{type(timeout).__name__}")
    want_size = world_size if world_size != -1 else _env_int("WORLD_SIZE")
    want_rank = rank if rank != -1 else _env_int("RANK")
    if launched_by_mpi():
        from .mpi import world

        w = world()
    elif want_size not in (None, 1):
        raise RuntimeError(f"init_process_group: world size {want_size} but this process was not "
                           "started by an MPI launcher; minitorch's ranks are MPI processes: "
                           f"run `minitorch run --nproc {want_size} SCRIPT` (or mpiexec -n "
                           f"{want_size} minitorch run SCRIPT)")
    else:
        w = Local()
    if want_size not in (None, w.size) or want_rank not in (None, w.rank):
        raise RuntimeError(f"init_process_group: rank {want_rank} of world size {want_size} asked "
                           f"for, but the MPI launcher made this process rank {w.rank} of "
                           f"{w.size}")
    _PG = ProcessGroup(w, name, timeout or DEFAULT_TIMEOUT)
    _PG.agree("init_process_group", caller())


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Leave the process group (every rank must call it: it is checked like a collective)."""
    global _PG
    pg = _group(group, "destroy_process_group")
    try:
        pg.agree("destroy_process_group", caller())
    finally:
        pg.free()
        _PG = None


def _group(group: ProcessGroup | None, fn: str) -> ProcessGroup:
    if _PG is None:
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    if group is not None and group is not _PG:
        raise ValueError(f"torch.distributed.{fn}: only the default (world) group exists in "
                         "minitorch; pass group=None or group.WORLD")
    return _PG


def get_rank(group: ProcessGroup | None = None) -> int:
    return _group(group, "get_rank").rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    return _group(group, "get_world_size").size()


def get_backend(group: ProcessGroup | None = None) -> str:
    return _group(group, "get_backend").backend


def default_pg() -> ProcessGroup:
    """The default process group, or the error torch gives before init_process_group."""
    return _group(None, "default_pg")


class Work:
    """What an async_op=True collective returns: here the call has already completed."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True


def _done(async_op: bool) -> Work | None:
    return Work() if async_op else None


def _check_tensor(t: Any, fn: str, arg: str = "tensor") -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"torch.distributed.{fn}: {arg} must be a Tensor, got {type(t).__name__}")
    return t


def _sig(fn: str, t: Tensor, **extra) -> str:
    more = "".join(f", {k}={v}" for k, v in extra.items())
    return f"{fn}(shape={tuple(t.shape)}, dtype={t.dtype}{more})"


def _write(t: Tensor, value: np.ndarray) -> None:
    """Store `value` in t in place (torch's collectives write their results into the tensor)."""
    arr = t.data
    if arr.flags.writeable:
        np.copyto(arr, value.reshape(arr.shape))
    else:  # saved by a live graph: give the tensor a new array instead of changing the saved one
        t.data = np.array(value.reshape(arr.shape), dtype=arr.dtype)


def _mpi_op(pg: ProcessGroup, op: ReduceOp, dtype: np.dtype):
    MPI = pg.world.MPI
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.kind not in "iub":
        raise RuntimeError(f"Cannot use {op} with non-integral dtype")
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
            ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND,
            ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}[op]


def _reduce_op(op: Any, fn: str) -> ReduceOp:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"torch.distributed.{fn}: op must be a torch.distributed.ReduceOp, got "
                        f"{op!r}")
    return op


def _avg(buf: np.ndarray, op: ReduceOp, size: int) -> np.ndarray:
    if op is not ReduceOp.AVG:
        return buf
    if buf.dtype.kind not in "fc":  # torch's message for an integer average
        name = {"u": "Byte", "b": "Bool"}.get(buf.dtype.kind, "Long")
        raise RuntimeError(f"result type Float can't be cast to the desired output type {name}")
    return buf / size


def _as_mpi(a: np.ndarray) -> np.ndarray:
    """A contiguous copy MPI can reduce (bool as uint8: MPI has no sum of booleans)."""
    return np.ascontiguousarray(a, dtype=np.uint8 if a.dtype == np.bool_ else a.dtype).copy()


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Combine `tensor` over all ranks with `op`, in place on every rank."""
    pg = _group(group, "all_reduce")
    t = _check_tensor(tensor, "all_reduce")
    op = _reduce_op(op, "all_reduce")
    pg.agree(_sig("all_reduce", t, op=op.name), caller())
    if op is ReduceOp.AVG and t.data.dtype.kind not in "fc":
        _avg(t.data, op, 1)  # raises torch's error
    if pg.world.size > 1:
        buf = _as_mpi(t.data)
        mpi_op = _mpi_op(pg, op, t.data.dtype)
        if t.data.dtype == np.bool_ and op in (ReduceOp.SUM, ReduceOp.PRODUCT):
            mpi_op = pg.world.MPI.MAX if op is ReduceOp.SUM else pg.world.MPI.MIN  # or, and
        pg.world.comm.Allreduce(pg.world.MPI.IN_PLACE, buf, op=mpi_op)
        _write(t, _avg(buf, op, pg.world.size).astype(t.data.dtype))
    return _done(async_op)


def broadcast(tensor: Tensor, src: int = 0, group: ProcessGroup | None = None,
              async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Rank `src`'s `tensor` into `tensor` on every rank."""
    pg = _group(group, "broadcast")
    t = _check_tensor(tensor, "broadcast")
    src = _root(pg, src if group_src is None else group_src, "broadcast", "src")
    pg.agree(_sig("broadcast", t, src=src), caller())
    if pg.world.size > 1:
        buf = _as_mpi(t.data)
        pg.world.comm.Bcast(buf, root=src)
        _write(t, buf.astype(t.data.dtype))
    return _done(async_op)


def _root(pg: ProcessGroup, r: int, fn: str, arg: str) -> int:
    if not isinstance(r, int) or not 0 <= r < pg.world.size:
        raise ValueError(f"torch.distributed.{fn}: {arg}={r!r} is not a rank of the world "
                         f"(0..{pg.world.size - 1})")
    return r


def _check_list(ts, n: int, like: Tensor, fn: str, arg: str) -> list[Tensor]:
    if not isinstance(ts, (list, tuple)) or len(ts) != n:
        raise ValueError(f"torch.distributed.{fn}: {arg} must be a list of {n} tensors (one per "
                         f"rank), got {type(ts).__name__} of length "
                         f"{len(ts) if hasattr(ts, '__len__') else '?'}")
    for i, t in enumerate(ts):
        _check_tensor(t, fn, f"{arg}[{i}]")
        if tuple(t.shape) != tuple(like.shape) or t.dtype != like.dtype:
            raise ValueError(f"torch.distributed.{fn}: {arg}[{i}] has shape {tuple(t.shape)} "
                             f"and dtype {t.dtype}; every entry must match the tensor's "
                             f"{tuple(like.shape)} {like.dtype}")
    return list(ts)


def _gathered(pg: ProcessGroup, a: np.ndarray) -> np.ndarray:
    """(size, *a.shape): every rank's `a`, in rank order."""
    buf = _as_mpi(a)
    out = np.empty((pg.world.size, *buf.shape), dtype=buf.dtype)
    if pg.world.size > 1:
        pg.world.comm.Allgather(buf, out)
    else:
        out[0] = buf
    return out.astype(a.dtype)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """tensor_list[r] = rank r's `tensor`, on every rank."""
    pg = _group(group, "all_gather")
    t = _check_tensor(tensor, "all_gather")
    outs = _check_list(tensor_list, pg.world.size, t, "all_gather", "tensor_list")
    pg.agree(_sig("all_gather", t), caller())
    for o, part in zip(outs, _gathered(pg, t.data)):
        _write(o, part)
    return _done(async_op)


def all_gather_single(output_tensor: Tensor, input_tensor: Tensor,
                      group: ProcessGroup | None = None, async_op: bool = False):
    """Every rank's input_tensor, concatenated along dim 0 (or stacked: output of shape
    (world_size, *input.shape)), into output_tensor."""
    pg = _group(group, "all_gather_single")
    o = _check_tensor(output_tensor, "all_gather_single", "output_tensor")
    t = _check_tensor(input_tensor, "all_gather_single", "input_tensor")
    n = pg.world.size
    if o.data.size != n * t.data.size or o.dtype != t.dtype:
        raise ValueError(f"torch.distributed.all_gather_single: output_tensor of shape "
                         f"{tuple(o.shape)} ({o.dtype}) must hold world_size ({n}) x the input's "
                         f"shape {tuple(t.shape)} ({t.dtype})")
    pg.agree(_sig("all_gather_single", t), caller())
    _write(o, _gathered(pg, t.data))
    return _done(async_op)


def reduce_scatter_single(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM,
                          group: ProcessGroup | None = None, async_op: bool = False):
    """Rank r's output = `op` over ranks of chunk r of `input` (dim 0 split in world_size)."""
    pg = _group(group, "reduce_scatter_single")
    o = _check_tensor(output, "reduce_scatter_single", "output")
    t = _check_tensor(input, "reduce_scatter_single", "input")
    op = _reduce_op(op, "reduce_scatter_single")
    n = pg.world.size
    if t.data.size != n * o.data.size or o.dtype != t.dtype:
        raise ValueError(f"torch.distributed.reduce_scatter_single: input of shape "
                         f"{tuple(t.shape)} ({t.dtype}) must hold world_size ({n}) x the output's "
                         f"shape {tuple(o.shape)} ({o.dtype})")
    pg.agree(_sig("reduce_scatter_single", t, op=op.name), caller())
    if op is ReduceOp.AVG:
        _avg(t.data, op, 1)  # an integer average: torch's error
    send = _as_mpi(t.data)
    if n > 1:
        recv = np.empty(o.data.size, dtype=send.dtype)
        pg.world.comm.Reduce_scatter_block(send, recv, op=_mpi_op(pg, op, t.data.dtype))
    else:
        recv = send.reshape(-1)
    _write(o, _avg(recv, op, n).astype(o.data.dtype))
    return _done(async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor,
                           group: ProcessGroup | None = None, async_op: bool = False):
    """all_gather_single under its older name (deprecated in torch 2.13, with its warning)."""
    _deprecated("all_gather_into_tensor", "all_gather_single")
    return all_gather_single(output_tensor, input_tensor, group, async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM,
                          group: ProcessGroup | None = None, async_op: bool = False):
    """reduce_scatter_single under its older name (deprecated in torch 2.13, with its warning)."""
    _deprecated("reduce_scatter_tensor", "reduce_scatter_single")
    return reduce_scatter_single(output, input, op, group, async_op)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"`torch.distributed.{old}` is deprecated. Please use "
                  f"`torch.distributed.{new}` instead.", FutureWarning, stacklevel=3)


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int = 0,
           group: ProcessGroup | None = None, async_op: bool = False):
    """gather_list[r] = rank r's `tensor`, on rank `dst` only (the others pass no list)."""
    pg = _group(group, "gather")
    t = _check_tensor(tensor, "gather")
    dst = _root(pg, dst, "gather", "dst")
    outs = None
    if pg.world.rank == dst:
        outs = _check_list(gather_list, pg.world.size, t, "gather", "gather_list")
    elif gather_list:
        raise ValueError("torch.distributed.gather: Argument ``gather_list`` must NOT be "
                         "specified on non-destination ranks.")
    pg.agree(_sig("gather", t, dst=dst), caller())
    buf = _as_mpi(t.data)
    out = np.empty((pg.world.size, *buf.shape), dtype=buf.dtype) if outs is not None else None
    if pg.world.size > 1:
        pg.world.comm.Gather(buf, out, root=dst)
    elif out is not None:
        out[0] = buf
    for o, part in zip(outs or [], out if out is not None else []):
        _write(o, part.astype(t.data.dtype))
    return _done(async_op)


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int = 0,
            group: ProcessGroup | None = None, async_op: bool = False):
    """Rank r's `tensor` = scatter_list[r] of rank `src`."""
    pg = _group(group, "scatter")
    t = _check_tensor(tensor, "scatter")
    src = _root(pg, src, "scatter", "src")
    send = None
    if pg.world.rank == src:
        ins = _check_list(scatter_list, pg.world.size, t, "scatter", "scatter_list")
        send = np.stack([_as_mpi(i.data) for i in ins])
    elif scatter_list:
        raise ValueError("torch.distributed.scatter: Argument ``scatter_list`` must NOT be "
                         "specified on non-source ranks.")
    pg.agree(_sig("scatter", t, src=src), caller())
    recv = _as_mpi(t.data)
    if pg.world.size > 1:
        pg.world.comm.Scatter(send, recv, root=src)
    else:
        recv = send[0]
    _write(t, recv.astype(t.data.dtype))
    return _done(async_op)


def barrier(group: ProcessGroup | None = None, async_op: bool = False, device_ids=None,
            timeout: datetime.timedelta | None = None):
    """Wait until every rank has called barrier (checked like any collective)."""
    pg = _group(group, "barrier")
    pg.agree("barrier()", caller())
    return _done(async_op)


def all_gather_object(object_list: list, obj: Any, group: ProcessGroup | None = None) -> None:
    """object_list[r] = rank r's picklable `obj`, on every rank."""
    pg = _group(group, "all_gather_object")
    if not isinstance(object_list, list) or len(object_list) != pg.world.size:
        raise ValueError(f"torch.distributed.all_gather_object: object_list must be a list of "
                         f"{pg.world.size} entries (one per rank)")
    pg.agree("all_gather_object()", caller())
    object_list[:] = pg.world.allgather(obj)


def broadcast_object_list(object_list: list, src: int = 0, group: ProcessGroup | None = None,
                          device=None) -> None:
    """object_list becomes rank `src`'s list (picklable objects), on every rank."""
    pg = _group(group, "broadcast_object_list")
    src = _root(pg, src, "broadcast_object_list", "src")
    if not isinstance(object_list, list):
        raise TypeError("torch.distributed.broadcast_object_list: object_list must be a list")
    pg.agree(f"broadcast_object_list(len={len(object_list)}, src={src})", caller())
    if pg.world.size > 1:
        object_list[:] = pg.world.comm.bcast(object_list, root=src)
