"""Data-parallel step time at 1 and 2 ranks (1 BLAS thread each) and a ring-allreduce cost model.

    python -m benchmarks.mpi_scaling [--rounds 2] [--steps 20] [--presets seed gpt2-mini]

The global batch stays 32 x 64 (strong scaling: each of N ranks takes 32/N rows), as `minitorch
train` under mpiexec does. 1 rank is the plain single-process trainer; 2 ranks run under
mpiexec; the two alternate, round by round. Each rank also times its allreduces, and a lone
allreduce of the model's gradient bytes (fastest of as many as steps) gives this machine's
effective bandwidth.

Cost model (per preset and dtype): a ring allreduce moves 2(N-1)/N x P bytes per rank per step
(P = parameter bytes); at bandwidth b that takes t_comm = 2(N-1)/N x 8P / b. Compute per rank is
t1 / N. Communication dominates from the smallest N with t_comm > t1 / N, that is
N > 1 + t1 b / (16 P). The model's 2-rank prediction (t1/2 + the measured lone allreduce) is set
beside the measured 2-rank step. Results go to reports/artifacts/mpi.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .mpi_step import MPI_ENV, mpiexec

ROOT = Path(__file__).resolve().parents[1]
BANDWIDTHS_GBIT = (1, 10, 100)
MAX_OUTSIDE_LOAD = 0.5  # cores used by other processes above which a run is marked unreliable
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


# -- one rank --------------------------------------------------------------------------------


def worker(presets: list[str], dtypes: list[str], steps: int, warmup: int, out: str) -> None:
    """Every (preset, dtype): build the trainer, warm up, then time `steps` steps (a barrier
    before each, so a step's time is the slowest rank's); rank 0 writes the JSON."""
    from minitorch.distributed import world
    from minitorch.train import Trainer, resolve

    dist = world()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for preset in presets:
            for dtype in dtypes:
                cfg = resolve(None, {"preset": preset, "dtype": dtype, "batch_size": 32,
                                     "iters": warmup + steps, "ckpt_interval": 0,
                                     "eval_iters": 1, "plot": False,
                                     "out_dir": f"{tmp}/{preset}-{dtype}"})
                t = Trainer(cfg, stream=io.StringIO(), dist=dist)
                for _ in range(warmup):
                    t.train_step()
                times, comm = [], []
                for _ in range(steps):
                    dist.barrier()
                    c0, t0 = dist.comm_seconds, time.perf_counter()
                    t.train_step()
                    times.append(time.perf_counter() - t0)
                    comm.append(dist.comm_seconds - c0)
                params = t.model.parameters()
                nbytes = sum(p.data.nbytes for p in params)
                lone = _lone_allreduce(dist, nbytes, np.dtype(dtype), steps)
                per_rank = dist.allgather({"step": times, "allreduce": comm})
                rows.append({"preset": preset, "dtype": dtype, "ranks": dist.size,
                             "params": t.model.num_parameters(), "param_bytes": nbytes,
                             "step_s": [max(r["step"][i] for r in per_rank)
                                        for i in range(steps)],
                             "allreduce_in_step_s": [max(r["allreduce"][i] for r in per_rank)
                                                     for i in range(steps)],
                             "lone_allreduce_s": lone})
    if dist.is_root:
        Path(out).write_text(json.dumps(rows))


def _lone_allreduce(dist, nbytes: int, dtype: np.dtype, reps: int) -> float | None:
    """Fastest of `reps` in-place allreduces of `nbytes` (barrier first; the minimum, since
    outside load only ever adds to a transfer's time), None on one rank."""
    if dist.size == 1:
        return None
    from mpi4py import MPI

    buf = np.ones(nbytes // dtype.itemsize, dtype)
    times = []
    for _ in range(reps):
        dist.barrier()
        t0 = time.perf_counter()
        dist.comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
        times.append(time.perf_counter() - t0)
    return min(times)


# -- the driver ------------------------------------------------------------------------------


def _launch(ranks: int, args: argparse.Namespace, out: Path) -> list[dict]:
    cmd = [sys.executable, "-m", "benchmarks.mpi_scaling", "--worker", "--steps",
           str(args.steps), "--warmup", str(args.warmup), "--json", str(out),
           "--presets", *args.presets, "--dtypes", *args.dtypes]
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(ROOT)}
    if ranks > 1:
        cmd = [*mpiexec(ranks), *cmd]
        env.update(MPI_ENV)
    subprocess.run(cmd, env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def cost_model(t1: float, param_bytes: int, n_max: int = 1024) -> dict:
    """Per bandwidth: the smallest N at which the ring allreduce outlasts a rank's compute."""
    out = {}
    for gbit in BANDWIDTHS_GBIT:
        b = gbit * 1e9  # bits/s
        n_star = next((n for n in range(2, n_max + 1)
                       if 2 * (n - 1) / n * 8 * param_bytes / b > t1 / n), None)
        out[f"{gbit}Gbit"] = {
            "allreduce_s_at_2": 8 * param_bytes / b,  # 2(N-1)/N = 1 at N=2
            "comm_dominates_from_ranks": n_star,
            "step_s_at_8": t1 / 8 + 2 * 7 / 8 * 8 * param_bytes / b,
        }
    return out


def summarize(rounds: list[dict[int, list[dict]]]) -> list[dict]:
    """Medians over rounds of each config's median step; efficiency t1 / (2 t2); the model."""
    keys = sorted({(r["preset"], r["dtype"]) for rnd in rounds for r in rnd[1]})
    table = []
    for preset, dtype in keys:
        key = (preset, dtype)

        def pick(n, field, agg=statistics.median, key=key):
            vals = [agg(r[field]) for rnd in rounds for r in rnd[n]
                    if (r["preset"], r["dtype"]) == key and r[field] is not None]
            return statistics.median(vals) if vals else None

        def one(n, key=key):
            return next(r for r in rounds[0][n] if (r["preset"], r["dtype"]) == key)

        t1, t2 = pick(1, "step_s"), pick(2, "step_s")
        lone = pick(2, "lone_allreduce_s", agg=lambda x: x)
        P = one(1)["param_bytes"]
        predicted = t1 / 2 + lone
        table.append({
            "preset": preset, "dtype": dtype, "params": one(1)["params"], "param_bytes": P,
            "step_ms": {"1": 1e3 * t1, "2": 1e3 * t2},
            "speedup_2": t1 / t2, "efficiency_2": t1 / (2 * t2),
            "allreduce_in_step_ms_2": 1e3 * pick(2, "allreduce_in_step_s"),
            "lone_allreduce_ms_2": 1e3 * lone,
            "effective_bandwidth_gbit": 8 * P / lone / 1e9,  # ring at N=2 moves P bytes per rank
            "model_step_ms_2": 1e3 * predicted, "measured_over_model_2": t2 / predicted,
            "cost_model": cost_model(t1, P),
        })
    return table


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--presets", nargs="+", default=["seed", "gpt2-mini", "llama-mini"])
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--json", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.presets, args.dtypes, args.steps, args.warmup, args.json)
        return 0
    from artifacts import write_json

    from .machine import LoadMeter, info

    rounds, loads = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            rnd = {}
            for n in (1, 2) if i % 2 == 0 else (2, 1):  # alternate which goes first
                meter = LoadMeter()
                meter.start()
                rnd[n] = _launch(n, args, Path(tmp) / f"r{i}-{n}.json")
                loads.append(meter.stop())
            rounds.append(rnd)
    table = summarize(rounds)
    for row in table:
        print(f"{row['preset']:>10} {row['dtype']}: 1 rank {row['step_ms']['1']:.1f} ms, "
              f"2 ranks {row['step_ms']['2']:.1f} ms (efficiency {row['efficiency_2']:.2f}); "
              f"allreduce {row['lone_allreduce_ms_2']:.2f} ms "
              f"({row['effective_bandwidth_gbit']:.1f} Gb/s); model/measured 2-rank "
              f"{row['measured_over_model_2']:.2f}; comm dominates from N = "
              + ", ".join(f"{k}: {v['comm_dominates_from_ranks']}"
                          for k, v in row["cost_model"].items()))
    busy = [x for x in loads if x is not None]
    reliable = bool(busy) and max(busy) < MAX_OUTSIDE_LOAD
    if not reliable:
        print(f"outside load up to {max(busy, default=float('nan')):.1f} cores: these times "
              "measure contention, not the cost of data parallelism (marked unreliable)")
    payload = {"machine": info(threads=1), "global_batch": 32, "block_size": 64,
               "reliable": reliable, "max_outside_load_cores": MAX_OUTSIDE_LOAD,
               "rounds": args.rounds, "steps": args.steps, "blas_threads_per_rank": 1,
               "outside_load_cores": loads, "bandwidths_gbit": list(BANDWIDTHS_GBIT),
               "model": "ring allreduce: 2(N-1)/N x param bytes per rank per step; compute "
                        "t1/N per rank (global batch fixed)",
               "results": table}
    print(f"wrote {write_json('mpi.json', payload)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
