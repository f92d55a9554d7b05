"""Print minitorch vs PyTorch eager vs hand-written NumPy: ms/step and ratios, interleaved.

    python -m benchmarks.compare_peers         # all presets, float32+float64, both allocators
    python -m benchmarks.compare_peers --presets seed --rounds 20 --malloc tuned

Writes the table, with machine/versions/threads/seeds, into reports/artifacts/bench.json
(key "peers"). Threads come from MINITORCH_BENCH_THREADS (default 2), see harness.py.
"""

from __future__ import annotations

import argparse
import os
import sys

import minitorch as mt
from artifacts import read_json, write_json
from minitorch.nn.gpt import PRESETS

from . import peers
from .harness import THREADS

TARGETS = {  # issue 5: seed preset, batch 32, block 64, 2 threads
    ("seed", "float32"): {"numpy": 1.1, "torch": 1.3},
    ("seed", "float64"): {"numpy": 1.1, "torch": 1.5},
}


def format_row(row: dict) -> str:
    ms = row["ms_per_step"]

    def cell(key):
        return f"{ms[key]:8.1f}" if key in ms else f"{'n/a':>8}"

    def ratio(peer, r=row):
        if f"ratio_vs_{peer}" not in r:
            return f"{'n/a':>15}"
        lo, hi = r[f"ratio_vs_{peer}_iqr"]
        return f"{r[f'ratio_vs_{peer}']:5.2f} [{lo:4.2f},{hi:4.2f}]"

    target = TARGETS.get((row["preset"], row["dtype"]))
    verdict = ""
    if target:
        ok = [row.get(f"ratio_vs_{p}", float("inf")) <= t for p, t in target.items()]
        verdict = "meets" if all(ok) else "misses"
        verdict += f" (<= {target['torch']}x torch, <= {target['numpy']}x numpy)"
    faults = "/".join(f"{row['faults_per_step'][i]:.0f}" for i in peers.IMPLS
                      if i in row["faults_per_step"])
    return (f"{row['preset']:<11} {row['dtype']:<8} {row['malloc']:<8}{cell('minitorch')}"
            f"{cell('torch')}{cell('numpy')}  {ratio('torch')}  {ratio('numpy')}  "
            f"{ratio('torch', row['cpu'])}  {ratio('numpy', row['cpu'])}  "
            f"{faults:>17}  {row['loadavg_1min']:4.1f}  {verdict}")


HEADER = (f"{'preset':<11} {'dtype':<8} {'malloc':<8}{'mt ms':>8}{'torch ms':>8}{'np ms':>8}"
          f"  {'mt/torch [IQR]':>15}  {'mt/numpy [IQR]':>15}  {'cpu mt/torch':>15}"
          f"  {'cpu mt/numpy':>15}  {'faults mt/th/np':>17}  load  target (wall ratios)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=sorted(PRESETS), choices=sorted(PRESETS))
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"],
                    choices=["float32", "float64"])
    ap.add_argument("--malloc", default="both", choices=[*peers.MALLOC_MODES, "both"],
                    help="glibc defaults, mallopt-tuned workers, or both (one table each)")
    ap.add_argument("--rounds", type=int, default=15, help="round-robin rounds per config")
    ap.add_argument("--steps", type=int, default=3, help="steps per implementation per round")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--label", default="", help="names this run in bench.json (peers_runs)")
    ap.add_argument("--no-write", action="store_true", help="print only, write no artifact")
    args = ap.parse_args(argv)
    if args.rounds < 2 or args.steps < 1:
        ap.error("need --rounds >= 2 and --steps >= 1")

    modes = peers.MALLOC_MODES if args.malloc == "both" else (args.malloc,)
    configs = [(p, d) for p in args.presets for d in args.dtypes]
    print(f"minitorch from {os.path.dirname(os.path.dirname(mt.__file__))}")
    print(f"interleaved: {args.rounds} rounds x {args.steps} steps, batch {args.batch}, "
          f"block {args.block}, {THREADS} threads; ms = median wall step, ratio = median over "
          "rounds; cpu = the same from process CPU time")
    print(HEADER)
    results = {"rows": [], "info": None, "rounds": args.rounds, "steps": args.steps,
               "threads": THREADS, "label": args.label,
               "minitorch_from": os.path.dirname(os.path.dirname(mt.__file__)),
               "targets": {f"{p}/{d}": t for (p, d), t in TARGETS.items()}}
    for mode in modes:
        out = peers.measure(configs, rounds=args.rounds, steps=args.steps, malloc=mode,
                            B=args.batch, T=args.block, log=lambda r: print(format_row(r),
                                                                         flush=True))
        results["rows"] += out["rows"]
        results["info"] = out["info"]
    if not args.no_write:
        bench = read_json("bench.json") or {}
        bench["peers"] = results  # the latest run; every thread count is kept below
        bench.setdefault("peers_by_threads", {})[str(THREADS)] = results
        if args.label:
            bench.setdefault("peers_runs", {})[args.label] = results
        path = write_json("bench.json", bench)
        print(f"wrote {path} (key 'peers')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
