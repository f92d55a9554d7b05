"""How the minitorch step time grows with batch, sequence length, width and depth.

    python -m benchmarks.scaling [--dtype float64] [--rounds 5]

Each axis is varied alone around the `seed` preset (batch 32, block 64, width 64, depth 3);
width scales the MLP hidden size with it (4x). Points are timed round-robin so drifts of a
shared machine spread over all of them. For sequence length the attention core
(scaled_dot_product_attention forward+backward at the model's shapes) is timed apart, to show
that the quadratic part lives there. The log-log slope of each axis is printed and written to
reports/artifacts/bench.json (key "scaling").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import minitorch as mt
from artifacts import read_json, write_json

from . import harness as H

AXES = {"batch": [8, 16, 32, 64], "seq": [16, 32, 64, 128], "width": [32, 64, 128, 256],
        "depth": [1, 2, 3, 6]}
BASE = {"batch": H.BATCH, "seq": H.BLOCK, "width": 64, "depth": 3}


def point_names() -> list[str]:
    """asv parameter values: "axis=value" for every point of every axis."""
    return [f"{axis}={v}" for axis, values in AXES.items() for v in values]


def parse(point: str) -> dict:
    axis, value = point.split("=")
    if axis not in AXES:
        raise ValueError(f"unknown scaling axis {axis!r}; choose from {sorted(AXES)}")
    return {**BASE, axis: int(value)}


def make_step(point: str, dtype: str) -> H.MinitorchStep:
    p = parse(point)
    cfg = H.config("seed", block_size=p["seq"], n_embd=p["width"], n_hidden=4 * p["width"],
                   n_layer=p["depth"])
    return H.MinitorchStep(cfg, dtype, B=p["batch"], T=p["seq"])


def attention_core(point: str, dtype: str):
    """fwd+bwd of the attention core of all layers at this point's shapes (nh = 1)."""
    p = parse(point)
    rng = np.random.default_rng(H.SEED)
    shape = (p["batch"], 1, p["seq"], p["width"])
    q, k, v = (mt.Tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
               for _ in range(3))

    def run():
        for _ in range(p["depth"]):
            out = mt.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            out.backward(np.ones(out.shape, dtype=out.dtype))

    return run


CLOCK = time.perf_counter  # --clock cpu: process CPU time (with 1 thread, robust to a busy box)


def _median_ms(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t0 = CLOCK()
        fn()
        times.append(CLOCK() - t0)
    return statistics.median(times) * 1e3


def measure(dtype: str, rounds: int, steps: int) -> dict:
    points = point_names()
    runs = {pt: make_step(pt, dtype) for pt in points}
    attn = {pt: attention_core(pt, dtype) for pt in points if pt.startswith("seq=")}
    for fn in [*runs.values(), *attn.values()]:
        fn()  # warm-up (Adam state, allocator)
    step_ms = {pt: [] for pt in points}
    attn_ms = {pt: [] for pt in attn}
    for _ in range(rounds):
        for pt in points:
            step_ms[pt].append(_median_ms(runs[pt], steps))
            if pt in attn:
                attn_ms[pt].append(_median_ms(attn[pt], steps))
    table = []
    for axis, values in AXES.items():
        ms = [statistics.median(step_ms[f"{axis}={v}"]) for v in values]
        row = {"axis": axis, "values": values, "step_ms": ms, "slope": _slope(values, ms)}
        if axis == "seq":
            core = [statistics.median(attn_ms[f"seq={v}"]) for v in values]
            rest = [a - b for a, b in zip(ms, core)]
            row.update(attention_core_ms=core, rest_ms=rest, attention_slope=_slope(values, core),
                       rest_slope=_slope(values, rest))
        table.append(row)
    return {"dtype": dtype, "rounds": rounds, "steps": steps, "base": BASE, "rows": table}


def _slope(xs, ys) -> float:
    """Exponent k of ys ~ xs^k over the upper half of the points (fixed costs fade there)."""
    half = len(xs) // 2
    return float(np.polyfit(np.log(xs[half - 1:]), np.log(np.maximum(ys[half - 1:], 1e-9)), 1)[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--clock", default="wall", choices=["wall", "cpu"])
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    result = {**measure(args.dtype, args.rounds, args.steps), "clock": args.clock}
    print(f"minitorch step time vs size ({args.dtype}, {H.THREADS} threads, {args.clock} clock; "
          f"others at {BASE})")
    for row in result["rows"]:
        cells = "  ".join(f"{v}:{ms:7.1f}" for v, ms in zip(row["values"], row["step_ms"]))
        print(f"{row['axis']:<6} ms  {cells}   slope {row['slope']:.2f}")
        if row["axis"] == "seq":
            for key in ("attention_core_ms", "rest_ms"):
                cells = "  ".join(f"{v}:{ms:7.1f}" for v, ms in zip(row["values"], row[key]))
                slope = row["attention_slope" if key.startswith("att") else "rest_slope"]
                print(f"  {key[:-3]:<17} {cells}   slope {slope:.2f}")
    if not args.no_write:
        bench = read_json("bench.json") or {}
        key = f"{args.dtype}/{args.clock}/threads={H.THREADS}"
        bench.setdefault("scaling", {})[key] = {**result, "info": H.run_info()}
        print(f"wrote {write_json('bench.json', bench)} (key 'scaling')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
