"""Which eager PyTorch set-up is fastest for this model, so the peer is PyTorch at its best.

    python -m benchmarks.torch_variants [--presets seed] [--dtypes float32 float64] [--rounds 10]

Times the torch training step with each Adam implementation (for-loop, foreach, fused; all with
zero_grad(set_to_none=True), torch threads = MINITORCH_BENCH_THREADS) in the measurement
harness, interleaved, and prints each variant's median ms/step and its ratio to the peer's
current choice (peers.TORCH_ADAM) with 95 % intervals. Fused Q/K/V and SDPA are fixed by the
twin (verification/torch_reference.py); README "The PyTorch peer" records the result.
"""

from __future__ import annotations

import argparse
import sys

from . import measure as M
from . import peers, stats
from .harness import THREADS


def _ci(r: dict | None, clock: str) -> str:
    if not r:
        return "1 (reference)"
    e = r[clock]
    if e["lo"] is None:
        return f"{e['median']:.3f} [no CI]"
    return f"{e['median']:.3f} [{e['lo']:.3f}, {e['hi']:.3f}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=["seed"])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--target-s", type=float, default=0.2)
    args = ap.parse_args(argv)
    print(f"torch variants, {THREADS} threads; ratio = {peers.TORCH_ADAM}'s time / the "
          "variant's (above 1 = the variant is faster than the current choice)")
    for preset in args.presets:
        for dtype in args.dtypes:
            jobs = [M.Job(adam, "benchmarks.peers:torch_variant", [preset, dtype, 32, 64, adam],
                          torch=True) for adam in peers.TORCH_ADAM_KW]
            out = M.measure(jobs, rounds=args.rounds, baseline=peers.TORCH_ADAM,
                            target_s=args.target_s)
            for adam, t in out["times"].items():
                ms, r = t["ms"], out["ratios"].get(adam)
                rel = r["reliability"] if r else t["reliability"]
                flag = "" if rel["reliable"] else stats.unreliable_text(rel)
                print(f"{preset:<10} {dtype:<8} adam={adam:<9} {ms['median']:8.2f} ms "
                      f"(cpu {t['cpu_ms']['median']:8.2f} ms)  ratio wall {_ci(r, 'wall')}, "
                      f"cpu {_ci(r, 'cpu')}  {flag}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
