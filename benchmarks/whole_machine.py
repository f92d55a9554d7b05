"""The whole machine: each library's ways to use every core for one global batch, interleaved.

    python -m benchmarks.whole_machine [--presets seed] [--dtypes float32 float64] [--rounds 8]

minitorch: eager (OpenBLAS on all cores), replay, DataParallel over N threads (one BLAS thread
each), and both; and N MPI ranks of one thread, replaying (benchmarks/mpi_step.py). PyTorch:
eager with N intra-op threads, and DistributedDataParallel over gloo with N ranks of one thread
(benchmarks/torch_ddp.py). N = the cores (MINITORCH_BENCH_THREADS, default 2). Every
configuration is its own worker process, timed round-robin by the harness (benchmarks/measure.py);
the verdict compares minitorch's fastest with PyTorch's fastest, by their per-round ratio with a
95 % interval. Also the single-process table: minitorch replay and
DataParallel against torch eager at the same thread count. Results: reports/artifacts/bench.json
key "whole_machine".
"""

from __future__ import annotations

import argparse
import sys

from artifacts import read_json, write_json

from . import harness as H
from . import measure as M
from . import peers, stats
from .measure import Job

TARGET = 0.8  # minitorch's fastest / PyTorch's fastest


def configs(n: int) -> dict[str, tuple[str, list, bool, int]]:
    """label -> (factory, extra args after preset/dtype/B/T, imports torch, MPI ranks)."""
    mt = "benchmarks.peers:make_step"
    return {
        "minitorch eager": (mt, [1, False], False, 1),
        "minitorch replay": (mt, [1, True], False, 1),
        f"minitorch {n} threads": (mt, [n, False], False, 1),
        f"minitorch {n} threads + replay": (mt, [n, True], False, 1),
        f"minitorch MPI, {n} ranks + replay": ("benchmarks.mpi_step:make_step", [], False, n),
        f"torch eager, {n} threads": (mt, [1, False], True, 1),
        f"torch DDP, {n} ranks": ("benchmarks.torch_ddp:make_step", [n], True, 1),
    }


def run(preset: str, dtype: str, rounds: int, B: int, T: int, log=print) -> dict:
    n = H.THREADS
    jobs = []
    for label, (factory, extra, uses_torch, ranks) in configs(n).items():
        args = ([label.split()[0], preset, dtype, B, T, *extra] if factory.startswith(
            "benchmarks.peers") else [preset, dtype, B, T, *extra])
        jobs.append(Job(label, factory, args, "tuned", torch=uses_torch, ranks=ranks))
    base = f"minitorch {n} threads + replay"
    out = M.measure(jobs, rounds=rounds, baseline=base, target_s=0.3, warmup=2)
    peers._check_same_model(preset, dtype, {"minitorch": out["first"][base], **out["first"]})
    times = {k: t["ms"] for k, t in out["times"].items()}
    fastest_mt = min((k for k in times if k.startswith("minitorch")),
                     key=lambda k: times[k]["median"])
    fastest_th = min((k for k in times if k.startswith("torch")),
                     key=lambda k: times[k]["median"])
    ratio = _pair_ratio(out, fastest_mt, fastest_th)
    row = {"preset": preset, "dtype": dtype, "batch": B, "block": T, "threads": n,
           "ms": {k: v["median"] for k, v in times.items()},
           "ms_ci": {k: [v["lo"], v["hi"]] for k, v in times.items()},
           "reliability": {k: t["reliability"] for k, t in out["times"].items()},
           "fastest_minitorch": fastest_mt, "fastest_torch": fastest_th,
           "ratio": ratio["median"], "ratio_ci": [ratio["lo"], ratio["hi"]], "target": TARGET,
           "load": out["load"]}
    rel = all(r["reliable"] for r in row["reliability"].values())
    row["reliable"] = rel
    est = stats.Estimate(ratio["median"], ratio["lo"], ratio["hi"], rounds)
    row["verdict"] = stats.target_verdict(est, TARGET, {"reliable": rel}) if rel else None
    log(_format(row))
    return row


def _pair_ratio(out: dict, a: str, b: str) -> dict:
    """Median over rounds of a's time / b's time (rounds where both samples were kept)."""
    sa, sb = out["times"][a]["samples_ms"], out["times"][b]["samples_ms"]
    ratios = [x / y for x, y in zip(sa, sb) if x is not None and y is not None]
    return stats.median_ci(ratios).to_dict() if ratios else {"median": None, "lo": None,
                                                              "hi": None}


def _format(row: dict) -> str:
    lines = [f"{row['preset']} {row['dtype']} (batch {row['batch']} x {row['block']}, "
             f"{row['threads']} cores, outside load {row['load']}):"]
    for k, ms in sorted(row["ms"].items(), key=lambda kv: kv[1]):
        lo, hi = row["ms_ci"][k]
        flag = "" if row["reliability"][k]["reliable"] else "  (not measured reliably)"
        lines.append(f"  {k:<34} {ms:8.1f} ms  [{_n(lo)}, {_n(hi)}]{flag}")
    lo, hi = row["ratio_ci"]
    verdict = row["verdict"] or "no verdict (not measured reliably)"
    lines.append(f"  fastest minitorch / fastest torch = {_n(row['ratio'], 2)} [{_n(lo, 2)}, "
                 f"{_n(hi, 2)}]"
                 f" ({row['fastest_minitorch']} vs {row['fastest_torch']}); target <= "
                 f"{TARGET}: {verdict}")
    return "\n".join(lines)


def _n(x: float | None, digits: int = 1) -> str:
    return "?" if x is None else f"{x:.{digits}f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=["seed"])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--batch", type=int, default=H.BATCH)
    ap.add_argument("--block", type=int, default=H.BLOCK)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    rows = [run(p, d, args.rounds, args.batch, args.block)
            for p in args.presets for d in args.dtypes]
    if not args.no_write:
        bench = read_json("bench.json") or {}
        bench["whole_machine"] = {"rows": rows, "info": H.run_info("tuned"),
                                  "rounds": args.rounds, "target": TARGET}
        print(f"wrote {write_json('bench.json', bench)} (key 'whole_machine')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
