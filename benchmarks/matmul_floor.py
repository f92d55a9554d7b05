"""How far a training step is from its own matmuls: the step's GEMMs and batched matmuls, run
alone and cache-hot, against the whole step, in one process, interleaved.

    python -m benchmarks.matmul_floor [--presets seed] [--dtypes float32 float64] [--rounds 7]

The matmul list is the one minitorch's kernels run (engine/ops/fused.py): per Linear, x W^T
forward and g W, g^T x backward on all B*T rows; per attention layer, q k^T and P v forward and
P^T dy, dy v^T, dS k, dS^T q backward, batched over (B, heads). Two machine set-ups: one thread
of Python with OpenBLAS on every core (eager, replay), and N worker threads of one BLAS thread
each on B/N rows (DataParallel; its floor is N threads running their shards' matmuls at once).
With --ranks N (default: one per core), also minitorch's MPI data parallelism (mpi_step: N ranks
of one BLAS thread, each replaying B/N rows): under mpiexec, every rank runs its shard's matmuls,
then its step, each sample from one barrier to the next, so it lasts until the slowest rank is
done; its floor is the N ranks' matmuls at once.
Results: reports/artifacts/bench.json key "matmul_floor".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from artifacts import read_json, write_json
from minitorch import blas

from . import harness as H

TARGET = 1.5  # step time / its matmuls' time


def matmuls(cfg, B: int, T: int, dtype: str, seed: int = 0) -> list:
    """Zero-argument callables, one per matmul of a training step (operands preallocated)."""
    rng = np.random.default_rng(seed)
    dt = H.DTYPES[dtype]

    def a(*shape):
        return rng.standard_normal(shape).astype(dt)

    N, C, nh = B * T, cfg.n_embd, cfg.n_head
    hs = C // nh
    linears = [(C, 3 * C), (C, C), (C, cfg.n_hidden), (cfg.n_hidden, C)] * cfg.n_layer
    jobs = []
    for i, o in linears + [(C, cfg.vocab_size)]:
        x, w, g = a(N, i), a(o, i), a(N, o)
        jobs += [lambda x=x, w=w: x @ w.T, lambda g=g, w=w: g @ w, lambda g=g, x=x: g.T @ x]
    for _ in range(cfg.n_layer):
        q, k, v, p, d = a(B, nh, T, hs), a(B, nh, T, hs), a(B, nh, T, hs), a(B, nh, T, T), \
            a(B, nh, T, hs)
        jobs += [lambda q=q, k=k: q @ k.swapaxes(-1, -2), lambda p=p, v=v: p @ v,
                 lambda p=p, d=d: p.swapaxes(-1, -2) @ d, lambda d=d, v=v: d @ v.swapaxes(-1, -2),
                 lambda p=p, k=k: p @ k, lambda p=p, q=q: p.swapaxes(-1, -2) @ q]
    return jobs


def _time(fn, repeat: int = 5, sync=lambda: None) -> float:
    """Best of `repeat` runs of fn after one warm-up, in ms; `sync` before and after each
    (an MPI barrier: a run then lasts until the slowest rank is done)."""
    fn()
    best = []
    for _ in range(repeat):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        best.append(time.perf_counter() - t)
    return min(best) * 1e3


def measure(preset: str, dtype: str, B: int, T: int, rounds: int, workers: int) -> dict:
    from .peers import make_step

    cfg = H.config(preset)
    one = matmuls(cfg, B, T, dtype)
    shards = [matmuls(cfg, B // workers, T, dtype, seed=k) for k in range(workers)]
    pool = ThreadPoolExecutor(workers)

    def run_all(jobs):
        for j in jobs:
            j()

    def parallel_floor():
        list(pool.map(run_all, shards))

    steps = {"eager": make_step("minitorch", preset, dtype, B, T),
             "replay": make_step("minitorch", preset, dtype, B, T, 1, True),
             f"{workers} threads": make_step("minitorch", preset, dtype, B, T, workers, False),
             f"{workers} threads + replay": make_step("minitorch", preset, dtype, B, T, workers,
                                                      True)}
    blas.set_threads(H.THREADS)  # make_step pinned 1 for the threaded steps
    series: dict[str, list[float]] = {k: [] for k in [*steps, "matmuls", "matmuls threaded"]}
    for _ in range(rounds):  # interleaved, so drift hits every series alike
        series["matmuls"].append(_time(lambda: run_all(one)))
        for k, step in steps.items():
            threaded = "threads" in k
            if threaded:
                blas.set_threads(1)
            series[k].append(_time(step, repeat=3))
            if threaded:
                blas.set_threads(H.THREADS)
        blas.set_threads(1)
        series["matmuls threaded"].append(_time(parallel_floor))
        blas.set_threads(H.THREADS)
    pool.shutdown()
    ms = {k: statistics.median(v) for k, v in series.items()}
    floors = {k: ms["matmuls threaded" if "threads" in k else "matmuls"] for k in steps}
    return {"preset": preset, "dtype": dtype, "batch": B, "block": T, "threads": H.THREADS,
            "workers": workers, "ms": ms, "matmul_count": len(one),
            "step_over_matmuls": {k: ms[k] / floors[k] for k in steps}, "target": TARGET}


def measure_ranks(dist, preset: str, dtype: str, B: int, T: int, rounds: int) -> dict | None:
    """On every rank of the MPI world `dist`: its shard's matmuls and its MPI step
    (mpi_step.rank_step), interleaved round by round, each timed from a barrier to a barrier.
    Rank 0 returns the series (ms), the other ranks None."""
    from .mpi_step import rank_step

    if B % dist.size:
        raise ValueError(f"matmul_floor --ranks: batch {B} does not split over {dist.size} ranks")
    blas.set_threads(1)
    jobs = matmuls(H.config(preset), B // dist.size, T, dtype, seed=dist.rank)
    step = rank_step(dist, preset, dtype, B, T)

    def run_all():
        for j in jobs:
            j()

    key = f"MPI {dist.size} ranks + replay"
    series: dict[str, list[float]] = {"matmuls as ranks": [], key: []}
    for _ in range(rounds):
        series["matmuls as ranks"].append(_time(run_all, 5, dist.barrier))
        series[key].append(_time(step, 3, dist.barrier))
    return {k: statistics.median(v) for k, v in series.items()} if dist.rank == 0 else None


def ranks_rows(args) -> list[dict]:
    """Rank 0's series per preset and dtype ({"preset", "dtype", "ms"}), from
    `mpiexec -n args.ranks` of this module; none, said in a line, without mpiexec."""
    from .mpi_step import MPI_ENV, mpiexec

    try:
        launcher = mpiexec(args.ranks)
    except RuntimeError as e:
        print(f"matmul_floor: no MPI rows: {e}", file=sys.stderr)
        return []
    cmd = [*launcher, sys.executable, "-m", "benchmarks.matmul_floor", "--as-rank",
           "--presets", *args.presets, "--dtypes", *args.dtypes, "--rounds", str(args.rounds)]
    out = subprocess.run(cmd, env={**os.environ, **MPI_ENV}, stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=["seed"])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--workers", type=int, default=H.THREADS)
    ap.add_argument("--ranks", type=int, default=H.THREADS,
                    help="MPI ranks for the mpi_step configuration (0 or 1: leave it out)")
    ap.add_argument("--as-rank", action="store_true", help=argparse.SUPPRESS)  # under mpiexec
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    from minitorch.allocator import tune_allocator

    tune_allocator()
    if args.as_rank:
        from minitorch.distributed import world

        dist = world()
        for preset in args.presets:
            for dtype in args.dtypes:
                ms = measure_ranks(dist, preset, dtype, H.BATCH, H.BLOCK, args.rounds)
                if ms is not None:
                    print(json.dumps({"preset": preset, "dtype": dtype, "ms": ms}), flush=True)
        return 0
    by_ranks = {(r["preset"], r["dtype"]): r["ms"] for r in ranks_rows(args)} \
        if args.ranks > 1 else {}
    rows = []
    for preset in args.presets:
        for dtype in args.dtypes:
            row = measure(preset, dtype, H.BATCH, H.BLOCK, args.rounds, args.workers)
            ranks = by_ranks.get((preset, dtype))
            if ranks is not None:
                (key,) = (k for k in ranks if k != "matmuls as ranks")
                row["ms"].update(ranks)
                row["ranks"] = args.ranks
                row["step_over_matmuls"][key] = ranks[key] / ranks["matmuls as ranks"]
            rows.append(row)
            ms = row["ms"]
            floors = f"threaded shards {ms['matmuls threaded']:.1f} ms"
            if "matmuls as ranks" in ms:
                floors += f", {args.ranks} ranks' shards {ms['matmuls as ranks']:.1f} ms"
            print(f"{preset} {dtype}, {H.THREADS} cores: matmuls alone {ms['matmuls']:.1f} ms "
                  f"({row['matmul_count']}), {floors}; step / its matmuls: " + ", ".join(
                      f"{k} {row['ms'][k]:.1f} ms = {r:.2f}x"
                      for k, r in row["step_over_matmuls"].items()) + f" (target <= {TARGET}x)")
    if not args.no_write:
        bench = read_json("bench.json") or {}
        bench["matmul_floor"] = {"rows": rows, "info": H.run_info("tuned")}
        print(f"wrote {write_json('bench.json', bench)} (key 'matmul_floor')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
