"""Print minitorch vs PyTorch eager vs hand-written NumPy: ms/step and ratios, interleaved.

    python -m benchmarks.compare_peers         # all presets, float32+float64, both allocators
    python -m benchmarks.compare_peers --presets seed --rounds 20 --malloc tuned

Writes the table, with machine/versions/threads/seeds, into reports/artifacts/bench.json
(key "peers", and "peers_by_machine"/<machine>). Threads come from MINITORCH_BENCH_THREADS
(default 2), see harness.py. Every ratio has a 95 % interval; a result measured under outside
load or with a wide interval is printed "not measured reliably" and gets no verdict.
"""

from __future__ import annotations

import argparse
import os
import sys

import minitorch as mt
from artifacts import read_json, write_json
from minitorch.models.gpt import PRESETS

from . import peers, stats
from .harness import THREADS

TARGETS = peers.TARGETS
MIN_ROUNDS = 8  # a 95 % interval of a median needs >= 6 kept rounds; 8 leaves room for drops


def _ratio(row: dict, peer: str, src: dict | None = None) -> str:
    src = row if src is None else src
    if f"ratio_vs_{peer}" not in src:
        return f"{'n/a':>18}"
    lo, hi = src.get(f"ratio_vs_{peer}_ci") or (None, None)
    ci = f"[{lo:4.2f},{hi:4.2f}]" if lo is not None and hi is not None else "[ no CI ]"
    return f"{src[f'ratio_vs_{peer}']:5.2f} {ci:>12}"


def verdict_text(row: dict) -> str:
    """'meets (<= 1.3x torch: meets, <= 1.1x numpy: undecided)', or the reason there is none."""
    if not row.get("target"):
        return ""
    if not row.get("reliable"):
        return f"no verdict: {row['unreliable']}"
    parts = [f"<= {row['target'][p]}x {p}: {v}" for p, v in row["verdict"].items()]
    verdicts = set(row["verdict"].values())
    overall = ("meets" if verdicts == {"meets"} else "misses" if "misses" in verdicts
               else "undecided")
    return f"{overall} ({', '.join(parts)})"


def format_row(row: dict) -> str:
    ms = row["ms_per_step"]

    def cell(key):
        v = ms.get(key)
        return f"{v:9.1f}" if isinstance(v, (int, float)) else f"{'n/a':>9}"

    faults = "/".join(f"{row['faults_per_step'][i] or 0:.0f}" for i in peers.IMPLS
                      if i in row["faults_per_step"])
    load = row.get("outside_load")
    return (f"{row['preset']:<11} {row['dtype']:<8} {row['malloc']:<8}{cell('minitorch')}"
            f"{cell('torch')}{cell('numpy')}  {_ratio(row, 'torch')}  {_ratio(row, 'numpy')}  "
            f"{_ratio(row, 'torch', row['cpu'])}  {_ratio(row, 'numpy', row['cpu'])}  "
            f"{faults:>17}  {load if load is None else round(load, 2)!s:>5}  "
            f"{verdict_text(row)}")


HEADER = (f"{'preset':<11} {'dtype':<8} {'malloc':<8}{'mt ms':>9}{'torch ms':>9}{'np ms':>9}"
          f"  {'mt/torch [95% CI]':>18}  {'mt/numpy [95% CI]':>18}  {'cpu mt/torch':>18}"
          f"  {'cpu mt/numpy':>18}  {'faults mt/th/np':>17}  {'load':>5}  verdict (wall ratios)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=sorted(PRESETS), choices=sorted(PRESETS))
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"],
                    choices=["float32", "float64"])
    ap.add_argument("--malloc", default="both", choices=[*peers.MALLOC_MODES, "both"],
                    help="glibc defaults, mallopt-tuned workers, or both (one table each)")
    ap.add_argument("--rounds", type=int, default=12,
                    help=f"interleaved rounds per config (at least {MIN_ROUNDS})")
    ap.add_argument("--steps", type=int, default=1,
                    help="at least this many steps per sample (calibration may take more)")
    ap.add_argument("--target-s", type=float, default=0.2,
                    help="calibrate steps per sample so that a sample lasts this long")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--workers", type=int, default=1,
                    help="minitorch and NumPy split the batch across this many threads, each "
                         "with a one-thread BLAS (torch keeps its intra-op threads)")
    ap.add_argument("--replay", action="store_true",
                    help="minitorch replays its captured step (minitorch.replay)")
    ap.add_argument("--label", default="", help="names this run in bench.json (peers_runs)")
    ap.add_argument("--no-write", action="store_true", help="print only, write no artifact")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.target_s <= 0 or args.workers < 1:
        ap.error("need --steps >= 1, --target-s > 0 and --workers >= 1")

    if args.rounds < MIN_ROUNDS:
        print(f"--rounds {args.rounds} raised to {MIN_ROUNDS}: fewer rounds cannot give a 95 % "
              "interval once loaded samples are dropped")
        args.rounds = MIN_ROUNDS
    modes = peers.MALLOC_MODES if args.malloc == "both" else (args.malloc,)
    configs = [(p, d) for p in args.presets for d in args.dtypes]
    print(f"minitorch from {os.path.dirname(os.path.dirname(mt.__file__))}")
    split = f", minitorch and NumPy on {args.workers} worker threads" if args.workers > 1 else ""
    split += ", minitorch replaying its step" if args.replay else ""
    print(f"interleaved: {args.rounds} rounds, each sample >= {args.target_s} s (calibrated "
          f"steps), batch {args.batch}, block {args.block}, {THREADS} threads{split}; ms = "
          "median wall step, ratio = median over rounds of the per-round ratio, [95 % CI]; cpu "
          "= the same from process CPU time; load = cores used by other processes (samples "
          f"above {stats.MAX_LOAD} retried, then dropped)")
    print(HEADER)
    results = {"rows": [], "info": None, "rounds": args.rounds, "target_s": args.target_s,
               "threads": THREADS, "workers": args.workers, "replay": args.replay,
               "label": args.label,
               "max_load": stats.MAX_LOAD,
               "max_ci": stats.MAX_CI, "torch_adam": peers.TORCH_ADAM,
               "minitorch_from": os.path.dirname(os.path.dirname(mt.__file__)),
               "targets": {f"{p}/{d}": t for (p, d), t in TARGETS.items()}}

    def log(row):
        print(format_row(peers.add_verdicts(row)), flush=True)

    for mode in modes:
        out = peers.measure(configs, rounds=args.rounds, steps=args.steps, malloc=mode,
                            B=args.batch, T=args.block, target_s=args.target_s, log=log,
                            workers=args.workers, replay=args.replay)
        results["rows"] += out["rows"]
        results["info"] = out["info"]
    results["machine"] = machine = (results["info"].get("minitorch") or {}).get("machine", "?")
    results["reliable"] = all(r["reliable"] for r in results["rows"])
    if not results["reliable"]:
        print("some results were not measured reliably (no verdict for them); for a reliable "
              "number run on a quiet machine, see benchmarks/README.md")
    if not args.no_write:
        bench = read_json("bench.json") or {}
        bench["peers"] = results  # the latest run; every thread count is kept below
        if args.workers == 1 and not args.replay:
            bench.setdefault("peers_by_threads", {})[str(THREADS)] = results
        else:  # minitorch threaded and/or replayed vs torch's intra-op threads
            key = f"{args.workers} worker{'s' if args.workers > 1 else ''}"
            key += " + replay" if args.replay else ""
            bench.setdefault("peers_by_workers", {})[f"{THREADS} threads, {key}"] = results
        bench.setdefault("peers_by_machine", {})[machine] = results
        if args.label:
            bench.setdefault("peers_runs", {})[args.label] = results
        path = write_json("bench.json", bench)
        print(f"wrote {path} (key 'peers')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
