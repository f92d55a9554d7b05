"""Profile the minitorch training step: time per op (forward vs backward, by composite scope),
engine overhead, optimizer, page faults, and the cProfile top functions.

    python -m benchmarks.profile_step [--preset seed] [--dtype float64] [--malloc tuned]

Per-op times come from timers wrapped around every registered Op's forward and vjp, and around
the composites in minitorch.nn.functional (their scope labels the ops they run, in forward and
in backward). The wrappers are installed here, in the benchmark process only; minitorch itself
is not changed. Results go to reports/artifacts/bench.json (key "profile").
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import resource
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from artifacts import read_json, write_json
from minitorch import REGISTRY
from minitorch.engine import graph
from minitorch.nn import functional as F

from . import harness as H
from . import peers, stats
from .machine import LoadMeter

CLOCK = time.perf_counter  # --clock cpu switches to time.process_time (robust to a busy machine)
ENGINE_FUNCS = ["unbroadcast", "_accumulate_leaf"]
COMPOSITE_FUNCS = ["linear", "layer_norm", "rms_norm", "cross_entropy",
                   "scaled_dot_product_attention", "rope", "embedding"]


class OpTimer:
    """Wraps Op.forward / Op.vjp and the composites with perf_counter timers while active."""

    def __init__(self):
        self.fwd = defaultdict(float)  # (scope, op) -> seconds
        self.bwd = defaultdict(float)
        self.calls = defaultdict(int)
        self.scope = ["model"]  # innermost composite being run
        self._saved = []

    def __enter__(self):
        for op in set(REGISTRY.values()):
            self._wrap(op, "forward", self._timed_forward(op, op.forward))
            if op.differentiable:
                self._wrap(op, "vjp", self._timed_vjp(op, op.vjp))
        for name in COMPOSITE_FUNCS:
            fn = getattr(F, name)
            self._saved.append((F, name, fn))
            setattr(F, name, self._scoped(name, fn))
        for name in ENGINE_FUNCS:  # numeric work the engine does outside the vjps
            fn = getattr(graph, name)
            self._saved.append((graph, name, fn))
            setattr(graph, name, self._timed_engine(name, fn))
        return self

    def _wrap(self, op, attr, fn):
        self._saved.append((op, attr, op.__dict__.get(attr)))  # None: inherited from Op
        setattr(op, attr, staticmethod(fn))

    def __exit__(self, *exc):
        for owner, attr, value in reversed(self._saved):
            if value is None:
                delattr(owner, attr)
            else:
                setattr(owner, attr, value)
        self._saved.clear()

    def _timed_forward(self, op, fn):
        def forward(ctx, *args, **kw):
            ctx._bench_scope = self.scope[-1]  # release() clears it with the rest of ctx
            t0 = CLOCK()
            out = fn(ctx, *args, **kw)
            self.fwd[(self.scope[-1], op.name)] += CLOCK() - t0
            self.calls[(self.scope[-1], op.name)] += 1
            return out
        return forward

    def _timed_vjp(self, op, fn):
        def vjp(ctx, g):
            scope = ctx.__dict__.get("_bench_scope", "model")
            t0 = CLOCK()
            out = fn(ctx, g)
            self.bwd[(scope, op.name)] += CLOCK() - t0
            return out
        return vjp

    def _timed_engine(self, name, fn):
        def run(*args):
            t0 = CLOCK()
            out = fn(*args)
            self.bwd[("engine", name)] += CLOCK() - t0
            self.calls[("engine", name)] += 1
            return out
        return run

    def _scoped(self, name, fn):
        def run(*args, **kw):
            self.scope.append(name)
            try:
                return fn(*args, **kw)
            finally:
                self.scope.pop()
        return run


def profile_ops(step: H.MinitorchStep, n: int) -> dict:
    """Per-op forward/backward ms per step, plus forward, backward and Adam wall time."""
    phases = defaultdict(list)
    with OpTimer() as timer:
        for _ in range(n):
            t0 = CLOCK()
            step.opt.zero_grad()
            _, loss = step.model(step.idx, step.targets)
            t1 = CLOCK()
            loss.backward()
            t2 = CLOCK()
            step.opt.step()
            t3 = CLOCK()
            for k, v in (("forward", t1 - t0), ("backward", t2 - t1), ("adam", t3 - t2),
                         ("step", t3 - t0)):
                phases[k].append(v * 1e3)
    keys = set(timer.fwd) | set(timer.bwd)
    ops = sorted(({"scope": s, "op": o, "fwd_ms": timer.fwd[(s, o)] * 1e3 / n,
                   "bwd_ms": timer.bwd[(s, o)] * 1e3 / n, "calls": timer.calls[(s, o)] // n}
                  for s, o in keys), key=lambda r: -(r["fwd_ms"] + r["bwd_ms"]))
    med = {k: statistics.median(v) for k, v in phases.items()}
    # The wrappers' own cost is in these numbers, so "engine" is an upper bound. It is the
    # Python bookkeeping: apply, Context, toposort, the pending-gradient dict and its sums.
    fwd_ops = sum(r["fwd_ms"] for r in ops)
    bwd_ops = sum(r["bwd_ms"] for r in ops)
    return {"phases_ms": med, "ops": ops, "fwd_ops_ms": fwd_ops, "bwd_ops_ms": bwd_ops,
            "engine_fwd_ms": statistics.mean(phases["forward"]) - fwd_ops,
            "engine_bwd_ms": statistics.mean(phases["backward"]) - bwd_ops}


def page_faults(step, n: int) -> dict:
    """Unwrapped steps: page faults, the median step time with its 95 % interval, and the
    outside load (cores other processes used) over the steps, as the harness judges them."""
    meter = LoadMeter()
    times, f0 = [], resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    meter.start()
    for _ in range(n):
        t0 = CLOCK()
        step()
        times.append(CLOCK() - t0)
    load = meter.stop()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    est = stats.median_ci([t * 1e3 for t in times])
    kept = n if load is None or load <= stats.MAX_LOAD else 0
    rel = stats.reliability(est, kept, n, load)
    return {"faults_per_step": faults / n, "ms_per_step": est.median,
            "ms_ci": [est.lo, est.hi], "outside_load": load, "reliable": rel["reliable"],
            "unreliable": "" if rel["reliable"] else stats.unreliable_text(rel)}


def cprofile_top(step, n: int, top: int) -> tuple[list, str]:
    prof = cProfile.Profile(CLOCK)
    prof.enable()
    for _ in range(n):
        step()
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out).sort_stats("tottime")
    stats.print_stats(top)
    rows = []
    for (file, line, func), (_, nc, tt, ct, _) in stats.stats.items():
        rows.append({"function": f"{_short(file)}"
                                 f":{line}({func})", "calls_per_step": nc / n,
                     "tottime_ms": tt * 1e3 / n, "cumtime_ms": ct * 1e3 / n})
    rows.sort(key=lambda r: -r["tottime_ms"])
    return rows[:top], out.getvalue()


def _short(file: str) -> str:
    """A profiled file relative to the repository or site-packages, whichever holds it."""
    root = str(Path(__file__).resolve().parent.parent) + "/"
    return file.split("/site-packages/")[-1].removeprefix(root)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="seed")
    ap.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    ap.add_argument("--malloc", default="default", choices=peers.MALLOC_MODES)
    ap.add_argument("--steps", type=int, default=10, help="at least 6 for a 95 %% interval")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                    help="cpu: process CPU time (use with MINITORCH_BENCH_THREADS=1)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.malloc == "tuned":
        peers.tune_malloc()
    step = H.MinitorchStep(H.config(args.preset), args.dtype)
    for _ in range(3):
        step()
    faults = page_faults(step, max(args.steps, 8))  # >= 6 steps for a 95 % interval
    ops = profile_ops(step, args.steps)
    top, text = cprofile_top(step, max(2, args.steps // 2), args.top)
    result = {"preset": args.preset, "dtype": args.dtype, "malloc": args.malloc,
              "clock": args.clock, **faults,
              **ops, "cprofile_top": top, "info": H.run_info()}
    _print(result, text)
    if not args.no_write:
        bench = read_json("bench.json") or {}
        key = f"{args.preset}/{args.dtype}/{args.malloc}/{args.clock}/threads={H.THREADS}"
        bench.setdefault("profile", {})[key] = result
        print(f"wrote {write_json('bench.json', bench)} (key 'profile' / '{key}')")
    return 0


def _print(r: dict, cprofile_text: str) -> None:
    p = r["phases_ms"]
    print(f"## {r['preset']} {r['dtype']} malloc={r['malloc']}, batch {H.BATCH}, block "
          f"{H.BLOCK}, {H.THREADS} threads, {r['clock']} clock")
    if not r["reliable"]:
        print(f"step time {r['unreliable']}")
    print(f"step {r['ms_per_step']:.1f} ms (unwrapped), {r['faults_per_step']:.0f} minor page "
          f"faults/step; wrapped: forward {p['forward']:.1f}, backward {p['backward']:.1f}, "
          f"adam {p['adam']:.1f} ms")
    print(f"op time: forward {r['fwd_ops_ms']:.1f} ms + engine {r['engine_fwd_ms']:.1f}; "
          f"backward {r['bwd_ops_ms']:.1f} ms + engine {r['engine_bwd_ms']:.1f}")
    print("\n| scope | op | calls | fwd ms | bwd ms | share of step |\n|---|---|---|---|---|---|")
    for o in r["ops"][:30]:
        share = (o["fwd_ms"] + o["bwd_ms"]) / p["step"]
        print(f"| {o['scope']} | {o['op']} | {o['calls']} | {o['fwd_ms']:.2f} | "
              f"{o['bwd_ms']:.2f} | {share:.0%} |")
    print("\ncProfile (per step):\n| function | calls | tottime ms | cumtime ms |")
    print("|---|---|---|---|")
    for row in r["cprofile_top"][:15]:
        print(f"| {row['function']} | {row['calls_per_step']:.0f} | {row['tottime_ms']:.2f} | "
              f"{row['cumtime_ms']:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
