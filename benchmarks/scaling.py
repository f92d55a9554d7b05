"""How the minitorch step time grows with batch, sequence length, width and depth.

    python -m benchmarks.scaling [--dtype float64] [--rounds 8]

Each axis is varied alone around the `seed` preset (batch 32, block 64, width 64, depth 3);
width scales the MLP hidden size with it (4x). Every point runs in its own worker of the
measurement harness (measure.py), in interleaved rounds, with outside-load checks; points not
measured reliably are marked, and an exponent outside the range the report's caption promises is
flagged. For sequence length the attention core
(scaled_dot_product_attention forward+backward at the model's shapes) is timed apart, to show
that the quadratic part lives there. The log-log slope of each axis is printed and written to
reports/artifacts/bench.json (key "scaling").
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import minitorch as mt
from artifacts import read_json, write_json

from . import harness as H
from . import measure as M
from . import stats
from .measure import Job

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


# The exponents the report's caption promises (time ~ size^k over the larger sizes); a measured
# exponent outside its range contradicts the caption and is flagged, in the terminal and the JSON.
EXPECTED = {"batch": (0.6, 1.4), "depth": (0.6, 1.4), "seq": (0.6, 2.4), "width": (0.6, 2.4),
            "attention_core": (1.5, 2.5), "rest": (0.6, 1.4)}
MIN_ROUNDS = 6


def measure(dtype: str, rounds: int, steps: int, target_s: float = 0.1, log=None) -> dict:
    """Every point (and the attention core of every seq point) in its own worker, timed by the
    harness in interleaved rounds; per point the median ms/step, its 95 % CI and reliability."""
    points = point_names()
    jobs = [Job(pt, "benchmarks.scaling:make_step", [pt, dtype]) for pt in points]
    jobs += [Job(f"attn:{pt}", "benchmarks.scaling:attention_core", [pt, dtype])
             for pt in points if pt.startswith("seq=")]
    out = M.measure(jobs, rounds=rounds, baseline=None, target_s=target_s, min_steps=steps,
                    warmup=1, info=False, log=log)
    times = out["times"]

    def ms(label):
        return times[label]["ms"]["median"]

    table = []
    for axis, values in AXES.items():
        labels = [f"{axis}={v}" for v in values]
        step = [ms(x) for x in labels]
        rel = [times[x]["reliability"] for x in labels]
        row = {"axis": axis, "values": values, "step_ms": step,
               "step_ci": [[times[x]["ms"]["lo"], times[x]["ms"]["hi"]] for x in labels],
               "reliable": [r["reliable"] for r in rel], "slope": _slope(values, step),
               "expected": {"slope": EXPECTED[axis]}}
        if axis == "seq":
            core = [ms(f"attn:{x}") for x in labels]
            rest = [a - b for a, b in zip(step, core)]
            row.update(attention_core_ms=core, rest_ms=rest, attention_slope=_slope(values, core),
                       rest_slope=_slope(values, rest))
            row["expected"].update(attention_slope=EXPECTED["attention_core"],
                                   rest_slope=EXPECTED["rest"])
            row["reliable"] = [a and times[f"attn:{x}"]["reliability"]["reliable"]
                               for a, x in zip(row["reliable"], labels)]
        row["contradicts"] = contradictions(row)
        table.append(row)
    reliable = all(all(r["reliable"]) for r in table)
    why = "" if reliable else stats.unreliable_text(
        {"load": out["load"], "ci_half_width": max(
            (t["reliability"]["ci_half_width"] or float("inf")) for t in times.values())})
    return {"dtype": dtype, "rounds": rounds, "target_s": target_s, "base": BASE, "rows": table,
            "reliable": reliable, "unreliable": why, "outside_load": out["load"],
            "steps_per_sample": out["steps_per_sample"]}


def contradictions(row: dict) -> list[str]:
    """'attention_slope 3.60 outside the expected [1.5, 2.5]' for each exponent out of range."""
    out = []
    for key, (lo, hi) in row["expected"].items():
        k = row.get(key)
        if isinstance(k, float) and not lo <= k <= hi:
            out.append(f"{key} {k:.2f} outside the expected [{lo}, {hi}]")
    return out


def _slope(xs, ys) -> float:
    """Exponent k of ys ~ xs^k over the upper half of the points (fixed costs fade there)."""
    half = len(xs) // 2
    return float(np.polyfit(np.log(xs[half - 1:]), np.log(np.maximum(ys[half - 1:], 1e-9)), 1)[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--rounds", type=int, default=8, help=f"at least {MIN_ROUNDS}")
    ap.add_argument("--steps", type=int, default=1, help="at least this many steps per sample")
    ap.add_argument("--target-s", type=float, default=0.1, help="seconds per sample")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    if args.rounds < MIN_ROUNDS:
        print(f"--rounds {args.rounds} raised to {MIN_ROUNDS}: fewer cannot give a 95 % interval")
        args.rounds = MIN_ROUNDS
    result = {**measure(args.dtype, args.rounds, args.steps, args.target_s), "clock": "wall"}
    print(f"minitorch step time vs size ({args.dtype}, {H.THREADS} threads, median of "
          f"{args.rounds} interleaved rounds; others at {BASE})")
    for row in result["rows"]:
        cells = "  ".join(f"{v}:{ms:7.1f}{'' if ok else '?'}"
                          for v, ms, ok in zip(row["values"], row["step_ms"], row["reliable"]))
        print(f"{row['axis']:<6} ms  {cells}   slope {row['slope']:.2f}")
        if row["axis"] == "seq":
            for key in ("attention_core_ms", "rest_ms"):
                cells = "  ".join(f"{v}:{ms:7.1f}" for v, ms in zip(row["values"], row[key]))
                slope = row["attention_slope" if key.startswith("att") else "rest_slope"]
                print(f"  {key[:-3]:<17} {cells}   slope {slope:.2f}")
        for c in row["contradicts"]:
            print(f"  FLAG: {c}")
    if not result["reliable"]:
        print(f"'?': {result['unreliable']} (exponents are not to be trusted)")
    if not args.no_write:
        bench = read_json("bench.json") or {}
        key = f"{args.dtype}/wall/threads={H.THREADS}"
        bench.setdefault("scaling", {})[key] = {**result, "info": H.run_info()}
        print(f"wrote {write_json('bench.json', bench)} (key 'scaling')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
