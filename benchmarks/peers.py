"""Interleaved peer timing: minitorch, PyTorch eager and hand-written NumPy, one process each.

Each implementation lives in its own worker process (`python -m benchmarks.peers IMPL ...`),
so torch's OpenMP pool, OpenBLAS's pool and the allocators never share a process. The
coordinator (`measure`) asks the workers in turn, round-robin with a rotating order, to run a few
training steps on the same seeded weights and batch; ratios are taken within each round, so
slow drifts of a shared machine cancel out. Used by compare_peers.py and bench_peers.py.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMPLS = ("minitorch", "torch", "numpy")
MALLOC_MODES = ("default", "tuned")


def tune_malloc() -> None:
    """Keep freed large temporaries in the heap (glibc mallopt), as `minitorch train` does."""
    from minitorch.allocator import tune_allocator

    if not tune_allocator():
        raise RuntimeError("mallopt refused the allocator settings")


def supports(impl: str, preset: str) -> bool:
    """The hand-written NumPy peer covers LayerNorm + learned-position presets only."""
    if impl != "numpy":
        return True
    from minitorch.nn.gpt import PRESETS

    cfg = PRESETS[preset]
    return cfg.norm == "layernorm" and cfg.pos == "learned"


# ---- worker side ------------------------------------------------------------------------------
def make_step(impl: str, preset: str, dtype: str, B: int, T: int):
    """A zero-argument callable running one training step of `impl` from the shared weights."""
    from . import harness as H

    cfg = H.config(preset)
    if impl == "minitorch":
        return H.MinitorchStep(cfg, dtype, B, T)
    arrays = H.named_arrays(cfg, dtype)
    idx, targets = H.batch(cfg.vocab_size, B, T)
    if impl == "numpy":
        from .numpy_peer import NumpyGPT

        model = NumpyGPT(cfg, arrays, H.DTYPES[dtype], lr=H.LR)
        return lambda: model.step(idx, targets)
    if impl == "torch":
        return _torch_step(cfg, arrays, dtype, idx, targets)
    raise ValueError(f"unknown implementation {impl!r}; choose from {IMPLS}")


def torch_reference():
    """verification/torch_reference.py of this checkout, loaded by path: when asv benchmarks an
    older commit from a worktree, that tree's verification/ may lack it or differ."""
    import importlib.util

    name = "_bench_torch_reference"
    if name not in sys.modules:
        path = os.path.join(ROOT, "verification", "torch_reference.py")
        spec = importlib.util.spec_from_file_location(name, path)
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


def _torch_step(cfg, arrays, dtype, idx, targets):
    import dataclasses

    import torch

    ref = torch_reference()
    model = ref.TorchGPT(dataclasses.asdict(cfg)).to(getattr(torch, dtype))
    ref.load_named_arrays(model, arrays)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    idx_t, tgt_t = torch.from_numpy(idx), torch.from_numpy(targets)

    def step():
        opt.zero_grad()
        _, loss = model(idx_t, tgt_t)
        loss.backward()
        opt.step()
        return float(loss.item())

    return step


def worker(impl: str, malloc: str) -> None:
    """Serve JSON requests on stdin: {"preset", "dtype", "B", "T", "steps", "warmup"} ->
    {"times": [seconds per step], "loss": last loss}; {"info": 1} -> run metadata."""
    if malloc == "tuned":
        tune_malloc()
    from . import harness as H

    if impl == "torch":
        import torch  # noqa: F401  (imported before fix_threads so it is pinned too)
    H.fix_threads()
    steps: dict = {}
    initial: dict = {}
    for line in sys.stdin:
        req = json.loads(line)
        if "info" in req:
            out = H.run_info()
        else:
            key = (req["preset"], req["dtype"], req["B"], req["T"])
            if key not in steps:  # the first step from the shared weights doubles as warm-up
                steps[key] = make_step(impl, *key)
                initial[key] = steps[key]()
            step, times, cpu, loss = steps[key], [], [], None
            for _ in range(req["warmup"]):
                step()
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            for _ in range(req["steps"]):
                t0, c0 = time.perf_counter(), time.process_time()
                loss = step()
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
            out = {"times": times, "cpu_times": cpu, "loss": loss, "initial_loss": initial[key],
                   "faults_per_step": faults / req["steps"]}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


# ---- coordinator side -------------------------------------------------------------------------
class Worker:
    """A running worker process for one implementation and allocator mode."""

    def __init__(self, impl: str, malloc: str = "default"):
        if impl not in IMPLS or malloc not in MALLOC_MODES:
            raise ValueError(f"worker: impl must be in {IMPLS}, malloc in {MALLOC_MODES}; "
                             f"got {impl!r}, {malloc!r}")
        import minitorch  # the worker must time the same minitorch as this process (a worktree)

        lib = os.path.dirname(os.path.dirname(os.path.abspath(minitorch.__file__)))
        env = {**os.environ, "PYTHONPATH": ROOT, "MINITORCH_BENCH_LIB": lib}
        self.impl = impl
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.peers", impl, malloc], cwd=ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, **req) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.impl} worker died (exit code {self.proc.poll()}); "
                               "run `python -m benchmarks.peers` by hand to see its traceback")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def measure(configs, rounds: int = 10, steps: int = 3, warmup: int = 2, malloc: str = "default",
            B: int = 32, T: int = 64, gap: float = 0.05, log=None) -> dict:
    """Interleave all implementations over `rounds` rounds for each (preset, dtype) in configs.

    Returns {"info": run_info of each worker, "rows": [...]}: per config, each implementation's
    median ms/step and the median over rounds of minitorch/peer (each round's ratio compares
    medians of `steps` steps taken back to back in time). row["cpu"] holds the same from process
    CPU time (all threads): with 1 thread it is robust to a busy machine; with more, spinning
    BLAS/OpenMP threads inflate it.
    """
    info, rows = {}, []
    for preset, dtype in configs:
        impls = [i for i in IMPLS if supports(i, preset)]
        # Fresh workers per config: glibc's dynamic mmap threshold remembers the largest block
        # freed so far, so a process that ran a bigger model first would fault less.
        workers = {impl: Worker(impl, malloc) for impl in impls}
        try:
            info = info or {impl: w.ask(info=1) for impl, w in workers.items()}
            row = _interleave(workers, impls, preset, dtype, rounds, steps, warmup, B, T, gap)
        finally:
            for w in workers.values():
                w.close()
        row["malloc"] = malloc
        rows.append(row)
        if log:
            log(row)
    return {"info": info, "rows": rows}


def _interleave(workers, impls, preset, dtype, rounds, steps, warmup, B, T, gap) -> dict:
    per_round = {i: [] for i in impls}
    cpu_round = {i: [] for i in impls}
    faults = {i: [] for i in impls}
    losses = {}
    for r in range(rounds):
        order = impls[r % len(impls):] + impls[:r % len(impls)]  # rotate who goes first
        for impl in order:
            out = workers[impl].ask(preset=preset, dtype=dtype, B=B, T=T, steps=steps,
                                    warmup=warmup if r == 0 else 0)
            per_round[impl].append(statistics.median(out["times"]) * 1e3)
            cpu_round[impl].append(statistics.median(out["cpu_times"]) * 1e3)
            losses[impl] = out["initial_loss"]
            faults[impl].append(out["faults_per_step"])
            time.sleep(gap)  # let the previous worker's spinning BLAS/OpenMP threads park
    _check_same_model(preset, dtype, losses)
    row = _row(preset, dtype, per_round, losses, B, T, rounds, steps)
    cpu = _row(preset, dtype, cpu_round, losses, B, T, rounds, steps)
    row["cpu"] = {k: v for k, v in cpu.items() if k.startswith(("ms_per", "ratio"))}
    row["faults_per_step"] = {i: statistics.median(v) for i, v in faults.items()}
    row["loadavg_1min"] = os.getloadavg()[0]  # > cores means the ratios are suspect
    return row


def _check_same_model(preset, dtype, losses) -> None:
    """The first-step losses from the shared weights and batch must agree, or the timings
    compare different computations."""
    tol = 1e-9 if dtype == "float64" else 1e-4
    ref = losses["minitorch"]
    bad = {i: v for i, v in losses.items() if abs(v - ref) > tol * max(1.0, abs(ref))}
    if bad:
        raise RuntimeError(f"{preset}/{dtype}: peers disagree on the first loss: minitorch {ref}, "
                           f"{bad} (tolerance {tol})")


def _row(preset, dtype, per_round, losses, B, T, rounds, steps) -> dict:
    ms = {i: statistics.median(v) for i, v in per_round.items()}
    row = {"preset": preset, "dtype": dtype, "batch": B, "block": T,
           "rounds": rounds, "steps_per_round": steps, "ms_per_step": ms,
           "ms_rounds": per_round, "initial_loss": losses}
    for peer in ("torch", "numpy"):
        if peer in per_round:
            ratios = [a / b for a, b in zip(per_round["minitorch"], per_round[peer])]
            row[f"ratio_vs_{peer}"] = statistics.median(ratios)
            row[f"ratio_vs_{peer}_iqr"] = _iqr(ratios)
    return row


def _iqr(xs) -> list[float]:
    q = statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0]] * 3
    return [q[0], q[2]]


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m benchmarks.peers {minitorch|torch|numpy} {default|tuned}")
    if os.environ.get("MINITORCH_BENCH_LIB"):
        sys.path.insert(0, os.environ["MINITORCH_BENCH_LIB"])  # before minitorch is imported
    worker(sys.argv[1], sys.argv[2])
