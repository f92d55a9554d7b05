"""The regression gate: is TARGET's training step slower than BASE's? Interleaved A/B timing of
two commits with the measurement harness, judged by significance AND size.

    python -m benchmarks.gate BASE [TARGET=HEAD] [--threshold 0.10] [--presets seed ...]
    benchmarks/compare.sh BASE [TARGET] ...          # the same; make bench-compare

Each commit's minitorch comes from a git worktree (.asv/worktrees/<sha12>) and runs in its own
worker; the two alternate round by round, so drifts of a shared machine hit both alike. A config
is "slower" only when a Mann-Whitney U test over the per-sample step times gives p < 0.05 AND
the median step time grew by at least the threshold (10 %). Loaded samples are retried, then
dropped; a config without enough clean samples or with a wide interval is "not measured
reliably" and gets no verdict.

Exit codes: 0 no regression; 1 a reliable, significant slowdown beyond the threshold; 2 usage or
run error; 3 nothing slower, but some config was not measured reliably (rerun on a quiet
machine). Writes reports/artifacts/bench.json key "gate" unless --no-write.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from . import measure as M
from . import stats
from .measure import Job

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def git(*args: str, cwd: str = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


class Worktrees:
    """A detached worktree per commit under .asv/worktrees; the ones this run added are removed
    on exit (results stay)."""

    def __init__(self, root: str = ROOT):
        self.root, self.created = root, []

    def __enter__(self):
        return self

    def tree(self, sha: str) -> str:
        path = os.path.join(self.root, ".asv", "worktrees", sha[:12])
        if not os.path.isdir(path):
            git("worktree", "add", "-q", "--detach", path, sha, cwd=self.root)
            self.created.append(path)
        return path

    def __exit__(self, *exc):
        for path in self.created:
            subprocess.run(["git", "worktree", "remove", "--force", path], cwd=self.root,
                           capture_output=True)


def compare(base_lib: str, target_lib: str, configs, rounds: int, target_s: float,
            threshold: float, max_load: float, max_ci: float, B: int = 32, T: int = 64,
            log=print) -> list[dict]:
    """One row per (preset, dtype): both medians with CIs, target/base ratio with its CI, the
    Mann-Whitney p, the verdict (slower / faster / same / None = not measured reliably)."""
    rows = []
    for preset, dtype in configs:
        args = ["minitorch", preset, dtype, B, T]
        jobs = [Job("base", "benchmarks.peers:make_step", args, lib=base_lib),
                Job("target", "benchmarks.peers:make_step", args, lib=target_lib)]
        out = M.measure(jobs, rounds=rounds, baseline="target", target_s=target_s,
                        max_load=max_load, max_ci=max_ci)
        t, r = out["times"], out["ratios"]["base"]  # r: target / base, per round
        clean = {k: [x for x in t[k]["samples_ms"] if x is not None] for k in ("base", "target")}
        rels = [t["base"]["reliability"], t["target"]["reliability"], r["reliability"]]
        reliable = all(x["reliable"] for x in rels)
        ch = stats.change(clean["base"], clean["target"], threshold) if reliable else None
        worst = max(rels, key=lambda x: (not x["reliable"], x["ci_half_width"] or 9e9))
        row = {"preset": preset, "dtype": dtype, "base_ms": t["base"]["ms"],
               "target_ms": t["target"]["ms"], "ratio": r["wall"], "reliable": reliable,
               "unreliable": "" if reliable else stats.unreliable_text(
                   {**worst, "load": out["load"]}),
               "why": worst["reason"],
               "p": ch["p"] if ch else None, "verdict": ch["verdict"] if ch else None,
               "outside_load": out["load"], "samples_ms": {k: t[k]["samples_ms"] for k in t}}
        rows.append(row)
        log(format_row(row))
    return rows


def format_row(row: dict) -> str:
    ci = row["ratio"]
    ci_s = (f"[{ci['lo']:.3f}, {ci['hi']:.3f}]" if ci["lo"] is not None else "[no CI]")
    verdict = row["verdict"] or f"no verdict: {row['unreliable']} ({row['why']})"
    p = f"p={row['p']:.3g}" if row["p"] is not None else ""
    return (f"{row['preset']:<10} {row['dtype']:<8} base {row['base_ms']['median']:8.2f} ms  "
            f"target {row['target_ms']['median']:8.2f} ms  target/base "
            f"{ci['median']:.3f} {ci_s}  {p}  {verdict}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gate",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("base", nargs="?", help="base commit (or use --trees)")
    ap.add_argument("target", nargs="?", default="HEAD")
    ap.add_argument("--trees", nargs=2, metavar=("BASE_DIR", "TARGET_DIR"),
                    help="compare the minitorch of two directories instead of two commits "
                         "(e.g. a frozen copy against the working tree)")
    ap.add_argument("--threshold", type=float, default=stats.THRESHOLD,
                    help="smallest slowdown that fails the gate (0.10 = 10 %%)")
    ap.add_argument("--presets", nargs="+", default=["seed"])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"],
                    choices=["float32", "float64"])
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--target-s", type=float, default=0.2, help="seconds per sample")
    ap.add_argument("--max-load", type=float, default=stats.MAX_LOAD,
                    help="outside load (cores) above which a sample is retried, then dropped")
    ap.add_argument("--max-ci", type=float, default=stats.MAX_CI,
                    help="widest relative CI half-width that still counts as measured")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    if args.trees:
        base, target = (os.path.abspath(t) for t in args.trees)
        missing = [t for t in (base, target) if not os.path.isdir(os.path.join(t, "minitorch"))]
        if missing:
            print(f"gate: error: no minitorch/ in {missing}", file=sys.stderr)
            return 2
    elif args.base:
        try:
            base, target = (git("rev-parse", "--verify", f"{c}^{{commit}}")
                            for c in (args.base, args.target))
        except subprocess.CalledProcessError as e:
            print(f"gate: error: unknown commit: {e.stderr.strip()}", file=sys.stderr)
            return 2
    else:
        ap.error("give BASE [TARGET] commits or --trees BASE_DIR TARGET_DIR")
    configs = [(p, d) for p in args.presets for d in args.dtypes]
    print(f"gate: {_short(base)} -> {_short(target)}; slower = Mann-Whitney p < {stats.ALPHA} "
          f"and >= {args.threshold:.0%} slower; {args.rounds} interleaved rounds; samples with "
          f"outside load > {args.max_load} cores retried, then dropped")
    with Worktrees() as wt:
        libs = (base, target) if args.trees else (wt.tree(base), wt.tree(target))
        rows = compare(*libs, configs, args.rounds, args.target_s, args.threshold,
                       args.max_load, args.max_ci)
    if not args.no_write:
        from artifacts import read_json, write_json

        from . import harness

        bench = read_json("bench.json") or {}
        bench["gate"] = {"base": base, "target": target, "threshold": args.threshold,
                         "rows": rows, "info": harness.run_info()}
        write_json("bench.json", bench)
    slower = [r for r in rows if r["verdict"] == "slower"]
    if slower:
        print(f"REGRESSION: {len(slower)} config(s) significantly slower by >= "
              f"{args.threshold:.0%} at {_short(target)} than at {_short(base)}", file=sys.stderr)
        return 1
    if not all(r["reliable"] for r in rows):
        print("gate: no regression found, but not every config was measured reliably (no "
              "verdict for those); rerun on a quiet machine", file=sys.stderr)
        return 3
    print("gate: no significant slowdown")
    return 0


def _short(ref: str) -> str:
    return ref if os.sep in ref else ref[:8]


if __name__ == "__main__":
    sys.exit(main())
