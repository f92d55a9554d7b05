"""The one measurement harness: fresh worker processes, warm-up, calibration, interleaved rounds,
outside-load checks, per-round ratios, medians with 95 % intervals and a reliability flag.

    jobs = [Job("minitorch", "benchmarks.peers:make_step", ["minitorch", "seed", "float32"]),
            Job("torch", "benchmarks.peers:make_step", ["torch", "seed", "float32"], torch=True)]
    out = measure(jobs, rounds=10, baseline="minitorch")

Each job runs in its own worker (`python -m benchmarks.measure MALLOC TORCH`) so OpenMP, OpenBLAS
and allocator state are never shared. After warm-up, each job is calibrated to run enough steps
per sample to last `target_s` (so /proc/stat's 10 ms ticks and timer noise stay small). Rounds
rotate who goes first; ratios are taken within a round, so slow drifts cancel. Around every
sample the worker records the cores other processes used (machine.LoadMeter); a sample above
`max_load` is retried, then dropped. `summarize` (pure, tested on synthetic series) turns the
samples into estimates and the reliability of each time and ratio.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field

from . import stats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MALLOC_MODES = ("default", "tuned")


@dataclass
class Job:
    """One thing to time: `factory(*args)` (a "benchmarks.module:function" path) returns a
    zero-argument callable running one step (its return value, e.g. the loss, is reported)."""

    label: str
    factory: str
    args: list = field(default_factory=list)
    malloc: str = "default"
    torch: bool = False  # import torch in the worker before the threads are pinned
    lib: str | None = None  # a tree whose minitorch to time (default: this process's minitorch)
    ranks: int = 1  # > 1: the worker runs under mpiexec with this many ranks (mpi_step.py)


# ---- worker side ------------------------------------------------------------------------------
def _resolve(path: str):
    module, _, fn = path.partition(":")
    if not module.startswith("benchmarks."):
        raise ValueError(f"factory must live in benchmarks/: {path!r}")
    return getattr(importlib.import_module(module), fn)


def worker(malloc: str, with_torch: bool) -> None:
    """Serve JSON requests on stdin, one reply line each:
    {"setup": factory, "args"} -> {"first": first result}; {"calibrate": seconds, "min": n}
    -> {"steps": n}; {"sample": n} -> {"wall", "cpu" (s per step), "load", "faults", "result"};
    {"info": 1} -> run metadata."""
    if malloc == "tuned":
        from minitorch.allocator import tune_allocator

        if not tune_allocator():
            raise RuntimeError("mallopt refused the allocator settings")
    from . import harness as H

    if with_torch:
        import torch  # noqa: F401  (imported before fix_threads so it is pinned too)
    H.fix_threads()
    guard = contextlib.nullcontext()
    if os.environ.get("MINITORCH_BENCH_RANKS"):  # a Job with ranks > 1: rank 0 serves requests
        from . import mpi_step

        conn = mpi_step.connect()
        if conn is not None:
            mpi_step.follow(conn)
            return
        guard = mpi_step.abort_on_error()
    with guard:
        _serve(malloc)


def _serve(malloc: str) -> None:
    """The request loop of `worker`."""
    from . import harness as H
    from .machine import LoadMeter

    step, meter = None, LoadMeter()
    for line in sys.stdin:
        req = json.loads(line)
        if "info" in req:
            out = H.run_info(malloc)
        elif "setup" in req:
            step = _resolve(req["setup"])(*req.get("args", []))
            out = {"first": step()}  # the first step from the shared weights
            for _ in range(req.get("warmup", 2)):
                step()
        elif "calibrate" in req:
            t0 = time.perf_counter()
            step()
            once = max(time.perf_counter() - t0, 1e-6)
            out = {"steps": max(req.get("min", 1), math.ceil(req["calibrate"] / once))}
        else:
            n = req["sample"]
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            meter.start()
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(n):
                result = step()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            out = {"wall": wall / n, "cpu": cpu / n, "load": meter.stop(), "result": result,
                   "faults": (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / n}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


# ---- coordinator side -------------------------------------------------------------------------
class Worker:
    """A running worker process for one job."""

    def __init__(self, job: Job):
        if job.malloc not in MALLOC_MODES:
            raise ValueError(f"malloc must be in {MALLOC_MODES}, got {job.malloc!r}")
        import minitorch  # by default the worker times this process's minitorch (a worktree)

        lib = job.lib or os.path.dirname(os.path.dirname(os.path.abspath(minitorch.__file__)))
        env = {**os.environ, "PYTHONPATH": ROOT, "MINITORCH_BENCH_LIB": lib}
        cmd = [sys.executable, "-m", "benchmarks.measure", job.malloc, str(int(job.torch))]
        if job.ranks > 1:
            from .mpi_step import MPI_ENV, mpiexec

            cmd = [*mpiexec(job.ranks), *cmd]
            env = {**env, **MPI_ENV, "MINITORCH_BENCH_RANKS": str(job.ranks)}
        self.job = job
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def ask(self, **req) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker for {self.job.label!r} died (exit code "
                               f"{self.proc.poll()}); its traceback is above")
        return json.loads(line)

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            if self.job.ranks > 1:  # mpiexec does not pass the end of stdin on: stop its ranks
                self.proc.terminate()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def measure(jobs: list[Job], rounds: int = 10, baseline: str | None = None,
            target_s: float = 0.2, min_steps: int = 1, warmup: int = 2,
            max_load: float = stats.MAX_LOAD, max_ci: float = stats.MAX_CI, retries: int = 2,
            pause: float = 0.2, gap: float = 0.05, info: bool = False, log=None) -> dict:
    """Time every job over `rounds` interleaved rounds; see `summarize` for the result."""
    workers = {j.label: Worker(j) for j in jobs}  # all start (import) at once
    samples: dict[str, list[dict]] = {j.label: [] for j in jobs}
    try:
        first = {k: w.ask(setup=w.job.factory, args=w.job.args, warmup=warmup)["first"]
                 for k, w in workers.items()}
        steps = {k: w.ask(calibrate=target_s, min=min_steps)["steps"]
                 for k, w in workers.items()}
        infos = {k: w.ask(info=1) for k, w in workers.items()} if info else {}
        labels = list(workers)
        recent: list[bool] = []  # kept or not, the latest samples of any job
        for r in range(rounds):
            order = labels[r % len(labels):] + labels[:r % len(labels)]
            for k in order:
                # A machine that stayed busy for the last two rounds will not calm down within
                # a retry: stop retrying (the result is unreliable anyway) to bound the run time.
                hopeless = len(recent) >= 2 * len(labels) and not any(recent[-2 * len(labels):])
                s = _sample(workers[k], steps[k], max_load, 0 if hopeless else retries, pause)
                samples[k].append(s)
                recent.append(s["kept"])
                time.sleep(gap)  # let the previous worker's spinning BLAS/OpenMP threads park
            if log:
                log(r, samples)
    finally:
        for w in workers.values():
            w.close()
    out = summarize(samples, baseline, max_load=max_load, max_ci=max_ci)
    out.update(first=first, steps_per_sample=steps, info=infos, rounds=rounds,
               target_s=target_s, retries=retries)
    return out


def _sample(w: Worker, n: int, max_load: float, retries: int, pause: float) -> dict:
    """One sample; retried (after a growing pause) while the outside load is above max_load."""
    loads = []
    for attempt in range(retries + 1):
        s = w.ask(sample=n)
        loads.append(s["load"])
        if s["load"] is None or s["load"] <= max_load:
            return {**s, "kept": True, "attempts": attempt + 1, "loads": loads}
        time.sleep(pause * (attempt + 1))
    return {**s, "kept": False, "attempts": retries + 1, "loads": loads}


def summarize(samples: dict[str, list[dict]], baseline: str | None,
              max_load: float = stats.MAX_LOAD, max_ci: float = stats.MAX_CI) -> dict:
    """Samples per label (one per round: {"wall", "cpu", "load", "kept", ...}) -> estimates.

    Returns {"times": {label: {"ms": Estimate dict, "cpu_ms", "reliability", "load",
    "faults"}}, "ratios": {label: {"wall": ..., "cpu": ..., "reliability"}} (label / baseline,
    per round, rounds where both samples were kept), "reliable": all of them, "load"}."""
    times, ratios = {}, {}
    for k, ss in samples.items():
        kept = [s for s in ss if s["kept"]]
        load = _median_load(ss)
        used = kept if _enough(len(kept), len(ss)) else ss  # too few kept: show all, flagged
        wall = _estimate([s["wall"] * 1e3 for s in used])
        cpu = _estimate([s["cpu"] * 1e3 for s in used])
        rel = stats.reliability(wall, len(kept), len(ss), load, max_ci)
        rel["from"] = "kept samples" if used is kept else "all samples, loaded ones included"
        times[k] = {"ms": wall.to_dict(), "cpu_ms": cpu.to_dict(), "reliability": rel,
                    "samples_ms": [round(s["wall"] * 1e3, 4) if s["kept"] else None
                                   for s in ss],
                    "loads": [s["load"] for s in ss],
                    "results": [s.get("result") for s in ss],  # each sample's last step's return
                    "faults": _median([s.get("faults") for s in kept])}
    if baseline is not None:
        base = samples[baseline]
        for k, ss in samples.items():
            if k == baseline:
                continue
            pairs = [(b, s) for b, s in zip(base, ss) if b["kept"] and s["kept"]]
            n_kept = len(pairs)
            if not _enough(n_kept, len(ss)):
                pairs = list(zip(base, ss))
            load = _median_load(base + ss)
            wall = _estimate([b["wall"] / s["wall"] for b, s in pairs])
            cpu = _estimate([b["cpu"] / s["cpu"] if s["cpu"] else math.nan for b, s in pairs])
            rel = stats.reliability(wall, n_kept, len(ss), load, max_ci)
            rel["from"] = ("kept samples" if n_kept == len(pairs) else
                           "all samples, loaded ones included")
            ratios[k] = {"wall": wall.to_dict(), "cpu": cpu.to_dict(), "reliability": rel}
    every = [t["reliability"] for t in times.values()] + [r["reliability"]
                                                           for r in ratios.values()]
    loads = [s["load"] for ss in samples.values() for s in ss if s["load"] is not None]
    return {"times": times, "ratios": ratios, "reliable": all(r["reliable"] for r in every),
            "load": _median(loads), "max_load": max_load, "max_ci": max_ci}


def _enough(kept: int, total: int) -> bool:
    return kept >= max(stats.MIN_N, math.ceil(stats.MIN_KEPT * total))


def _estimate(xs: list[float]) -> stats.Estimate:
    return stats.median_ci(xs) if xs else stats.Estimate(math.nan, None, None, 0)


def _median_load(ss: list[dict]) -> float | None:
    return _median([x for s in ss for x in s.get("loads", [s.get("load")]) if x is not None])


def _median(xs) -> float | None:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m benchmarks.measure {default|tuned} {0|1}  (a worker: "
                 "reads JSON requests on stdin)")
    if os.environ.get("MINITORCH_BENCH_LIB"):
        sys.path.insert(0, os.environ["MINITORCH_BENCH_LIB"])  # before minitorch is imported
    worker(sys.argv[1], sys.argv[2] == "1")
