"""A memray flamegraph of one training step of the seed GPT (float64, Adam), as one
self-contained HTML file (memray's --no-web: no CDN scripts).

    python -m memory.flamegraph --out reports/out/memray-step.html

Warm-up steps run first, outside the trace, so Adam's state and first-call caches are not
counted. --leak traces the negative control instead (graph release off, cyclic GC off).
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

from . import workload

MB = 2**20


def trace_steps(path: Path, steps: int, warmup: int, batch: int, leak: bool) -> dict:
    """Run warm-up steps untraced, then `steps` steps under memray.Tracker writing `path`."""
    import memray

    if leak:
        gc.disable()
    with workload.graph_release_disabled() if leak else nullcontext():
        work = workload.Workload(batch=batch)
        work.run(warmup)
        with memray.Tracker(path):
            for _ in range(steps):
                work.step()
    meta = memray.FileReader(path).metadata
    return {"peak_memory_mb": meta.peak_memory / MB, "allocations": meta.total_allocations,
            "steps": steps, "warmup": warmup, "batch": batch, "leak": leak}


def render(results: Path, out: Path) -> None:
    """memray's flamegraph of the high-water mark, with its assets inlined (--no-web)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "memray", "flamegraph", "--no-web", "-f", "-o", str(out),
           str(results)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memory.flamegraph", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("reports/out/memray-step.html"),
                    help="HTML file to write (default: %(default)s)")
    ap.add_argument("--steps", type=int, default=1, help="traced steps (default: 1)")
    ap.add_argument("--warmup", type=int, default=2, help="untraced steps first (default: 2)")
    ap.add_argument("--batch", type=int, default=workload.BATCH, help="B (default: %(default)s)")
    ap.add_argument("--leak", action="store_true",
                    help="trace the negative control (graph release off, gc off)")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.warmup < 1 or args.batch < 1:
        ap.error(f"--steps, --warmup and --batch must be >= 1, got {args.steps}, "
                 f"{args.warmup}, {args.batch}")
    with tempfile.TemporaryDirectory(prefix="memray-step-") as tmp:
        results = Path(tmp) / "step.bin"
        info = trace_steps(results, args.steps, args.warmup, args.batch, args.leak)
        render(results, args.out)
    print(json.dumps({**info, "html": str(args.out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
