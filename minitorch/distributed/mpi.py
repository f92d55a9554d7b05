"""Data-parallel training over MPI (mpi4py): one process per rank, each holding the whole model.

`world()` is the run's communicator: `Local` in a plain process, `MPIWorld` when an MPI launcher
(mpiexec) started this process. mpi4py is imported only then, so the rest of minitorch never
needs it. Every rank draws the same global batch and computes on its rows; gradients are
averaged with one in-place allreduce per dtype over a flat buffer, weighted by each rank's share,
so an N-rank step equals the 1-rank step up to summation order. Nothing here writes files.
"""

from __future__ import annotations

import os
import pickle
import time
import zlib
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")
# Set by the launchers this package supports: Open MPI, MPICH/Hydra, and any PMIx launcher.
LAUNCH_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")


class ReplicaDriftError(RuntimeError):
    """The ranks' weights differ (the message names the step and the ranks)."""


def launched_by_mpi() -> bool:
    """True if an MPI launcher started this process (its environment says so)."""
    return any(v in os.environ for v in LAUNCH_VARS)


def shard(n: int, rank: int, size: int) -> tuple[int, int]:
    """Rows [lo, hi) of n that `rank` of `size` takes: rank r gets r*n/size .. (r+1)*n/size."""
    return rank * n // size, (rank + 1) * n // size


def flat_span(arrays: Sequence[np.ndarray]) -> np.ndarray | None:
    """The one contiguous 1-D array that `arrays` tile in order (adjacent views of one flat
    buffer, as flat parameter storage makes them), else None (then the caller packs)."""
    if not arrays:
        return None
    base = arrays[0].base
    if base is None or not all(a.base is base and a.flags.c_contiguous for a in arrays):
        return None
    if not (base.flags.c_contiguous and all(a.dtype == base.dtype for a in arrays)):
        return None
    ptr = arrays[0].__array_interface__["data"][0]
    start = ptr
    for a in arrays:
        if a.__array_interface__["data"][0] != ptr:
            return None
        ptr += a.nbytes
    flat = base.reshape(-1)
    off = (start - flat.__array_interface__["data"][0]) // flat.itemsize
    return flat[off:off + (ptr - start) // flat.itemsize]


def weights_checksum(arrays: Sequence[np.ndarray]) -> int:
    """crc32 over the arrays' bytes in order: equal on two ranks iff (almost surely) the
    weights are bit-identical."""
    crc = 0
    for a in arrays:
        crc = zlib.crc32(np.ascontiguousarray(a).view(np.uint8), crc)
    return crc


class Local:
    """The single-process world: every collective is the identity. The trainer calls the same
    methods in one process as under MPI, so the two paths cannot drift apart."""

    rank, size = 0, 1
    comm_seconds = 0.0  # time spent in gradient allreduces (benchmarks read it)

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    def agree(self, fn: Callable[[], T], root_only: bool = False) -> T | None:
        """fn() (on rank 0 only if root_only); an exception on any rank is raised on all."""
        return fn()

    def bcast(self, obj: T) -> T:
        """Rank 0's `obj` on every rank."""
        return obj

    def allgather(self, obj: T) -> list[T]:
        return [obj]

    def average_step(self, params, loss: float, share: float) -> float:
        """Average gradients (in place) and the loss over ranks, each weighted by its share of
        the global batch; returns the global loss."""
        return loss

    def mean(self, total: float, count: int) -> float:
        """The global mean of values whose local sum is `total` over `count` items."""
        return total / count

    def sync_params(self, params) -> None:
        """Overwrite every rank's parameters with rank 0's."""

    def check_replicas(self, params, step: int) -> None:
        """ReplicaDriftError naming the step and ranks if any rank's weights differ from rank
        0's."""

    def barrier(self) -> None:
        pass

    def abort(self, code: int) -> None:
        """End every rank of the job now (MPI_Abort); in one process, nothing."""

    def failing_together(self, timeout: float = 3.0) -> bool:
        """Called by a rank that is about to exit with an error: True if every rank reached
        this call within `timeout` seconds (an error they all raised), so they may exit
        normally; False if this rank failed alone (then it must abort the job)."""
        return True


class MPIWorld(Local):
    """Collectives over an mpi4py communicator (COMM_WORLD by default)."""

    def __init__(self, comm=None):
        from mpi4py import MPI  # only here: minitorch imports without mpi4py

        self.MPI = MPI
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self._errors = self.comm.Dup()  # for failing_together only
        self.comm_seconds = 0.0
        self._buffers: dict[np.dtype, np.ndarray] = {}

    def agree(self, fn: Callable[[], T], root_only: bool = False) -> T | None:
        result, err = None, None
        if self.is_root or not root_only:
            try:
                result = fn()
            except Exception as e:  # noqa: BLE001 - re-raised on every rank below
                err = e
        errors = self.comm.allgather(None if err is None else _portable(err))
        for r, e in enumerate(errors):
            if e is not None:  # the lowest failing rank's error, the same on every rank
                raise _naming_rank(e, r)
        return result

    def bcast(self, obj: T) -> T:
        return self.comm.bcast(obj, root=0)

    def allgather(self, obj: T) -> list[T]:
        return self.comm.allgather(obj)

    def barrier(self) -> None:
        self.comm.Barrier()

    def failing_together(self, timeout: float = 3.0) -> bool:
        # a barrier on a duplicate communicator: it cannot match a collective of the run's
        req = self._errors.Ibarrier()
        deadline = time.monotonic() + timeout
        while not req.Test():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def abort(self, code: int) -> None:
        self.comm.Abort(code)

    def _flat(self, dtype: np.dtype, n: int) -> np.ndarray:
        """A reused flat buffer of n elements of dtype (one per dtype, grown when needed)."""
        buf = self._buffers.get(dtype)
        if buf is None or buf.size < n:
            buf = self._buffers[dtype] = np.empty(n, dtype)
        return buf[:n]

    def _allreduce(self, buf: np.ndarray) -> None:
        t0 = time.perf_counter()
        self.comm.Allreduce(self.MPI.IN_PLACE, buf, op=self.MPI.SUM)
        self.comm_seconds += time.perf_counter() - t0

    def average_step(self, params, loss: float, share: float) -> float:
        by_dtype: dict[np.dtype, list] = {}
        for p in params:
            by_dtype.setdefault(np.dtype(p.dtype), []).append(p)
        for dtype, group in by_dtype.items():
            grads = [None if p.grad is None else p.grad.data for p in group]
            span = flat_span(grads) if all(g is not None for g in grads) else None
            if span is not None:  # flat gradient storage: reduce it where it lies, no copies
                span *= share
                self._allreduce(span)
                continue
            buf = self._flat(dtype, sum(p.data.size for p in group))
            off = 0
            for p, g in zip(group, grads):
                dst = buf[off:off + p.data.size]
                if g is None:  # an unused parameter: the same on every rank, contributes 0
                    dst[...] = 0
                else:
                    np.multiply(g.reshape(-1), share, out=dst)
                off += p.data.size
            self._allreduce(buf)
            off = 0
            for p, g in zip(group, grads):
                src = buf[off:off + p.data.size].reshape(p.data.shape)
                if g is None:
                    p.accumulate_grad(src)
                elif g.flags.writeable:
                    np.copyto(g, src)
                else:
                    p.grad.data = src.copy()
                off += p.data.size
        total = np.array([loss * share])  # on its own: packed beside flat gradients, it would
        self._allreduce(total)  # cost them a copy in and out
        return float(total[0])

    def mean(self, total: float, count: int) -> float:
        buf = np.array([total, count], dtype=np.float64)
        self.comm.Allreduce(self.MPI.IN_PLACE, buf, op=self.MPI.SUM)
        return float(buf[0] / buf[1])

    def sync_params(self, params) -> None:
        by_dtype: dict[np.dtype, list] = {}
        for p in params:
            by_dtype.setdefault(np.dtype(p.dtype), []).append(p)
        for dtype, group in by_dtype.items():
            buf = self._flat(dtype, sum(p.data.size for p in group))
            if self.is_root:
                np.concatenate([p.data.reshape(-1) for p in group], out=buf)
            self.comm.Bcast(buf, root=0)
            if not self.is_root:
                off = 0
                for p in group:
                    np.copyto(p.data, buf[off:off + p.data.size].reshape(p.data.shape))
                    off += p.data.size

    def check_replicas(self, params, step: int) -> None:
        sums = self.comm.allgather(weights_checksum([p.data for p in params]))
        drifted = [r for r, s in enumerate(sums) if s != sums[0]]
        if drifted:
            raise ReplicaDriftError(
                f"replicas drifted at step {step}: the weights of rank(s) "
                f"{', '.join(map(str, drifted))} differ from rank 0's (checksums "
                f"{', '.join(f'{s:08x}' for s in sums)}); every rank must apply the same "
                "averaged gradients")


def _portable(err: Exception) -> Exception:
    """`err` if it survives pickling (to be sent to the other ranks), else a RuntimeError with
    its message."""
    try:
        pickle.loads(pickle.dumps(err))
        return err
    except Exception:  # noqa: BLE001 - any unpicklable exception is sent as its message
        return RuntimeError(f"{type(err).__name__}: {err}")


def _naming_rank(err: Exception, rank: int) -> Exception:
    """`err` with "rank N: " before its message (rank 0's as it is: rank 0 is the default)."""
    if rank == 0:
        return err
    try:
        return type(err)(f"rank {rank}: {err}")
    except Exception:  # noqa: BLE001 - an exception type that takes other arguments
        return RuntimeError(f"rank {rank}: {type(err).__name__}: {err}")


def world() -> Local:
    """The communicator of this process: MPIWorld under an MPI launcher, else Local.

    Raises:
        ImportError: launched by MPI but mpi4py is not installed (the message says how).
    """
    if not launched_by_mpi():
        return Local()
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise ImportError("this process was started by an MPI launcher but mpi4py is not "
                          "installed (pip install '.[mpi]' in the clone, or make venv)") from None
    return MPIWorld()
