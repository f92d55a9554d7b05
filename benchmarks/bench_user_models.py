"""asv: training iterations of models written as public PyTorch scripts write them
(benchmarks/user_models/), run on minitorch and on torch eager; the nanoGPT-style GPT also
against minitorch's own GPT of the same architecture (issue 31's targets: <= 1.0x torch, the
batching loop <= 1.5x, the user's GPT within 10 % of minitorch's own).

`UserModelStep` is asv's timing of each library alone; `UserModelRatio` takes the ratios from
the harness (benchmarks/measure.py: one worker per library, interleaved rounds, load checks;
nan when not measured reliably), at one thread and at every core.
`python -m benchmarks.bench_user_models [--write]` prints the table (and stores it in
bench.json, key user_models).
"""

from __future__ import annotations

import os

from . import harness as H

MODELS = ("nanogpt", "makemore_transformer", "makemore_mlp", "bigram")
LIBS = ("minitorch", "torch", "minitorch_gpt")  # minitorch_gpt: minitorch.models.gpt.GPT
THREADS = sorted({1, os.cpu_count() or 1})  # one thread and the whole machine
TARGETS = {"nanogpt": 1.0, "makemore_transformer": 1.0, "makemore_mlp": 1.0, "bigram": 1.5}
OWN_GPT_TARGET = 1.1


def make_step(lib: str, model: str, threads: int | None = None):
    """A training iteration of `model` on `lib` (a measure.Job factory)."""
    from .user_models import bigram, makemore, nanogpt

    if lib == "torch":
        import torch as L
    else:
        import minitorch as L
    H.fix_threads(threads or H.THREADS)  # after torch's import: pins its pool too
    if lib == "minitorch_gpt":
        if model != "nanogpt":
            raise NotImplementedError("minitorch's own GPT is compared with the nanoGPT model")
        return nanogpt.build_own(L)
    builders = {"nanogpt": nanogpt.build, "makemore_transformer": makemore.build,
                "makemore_mlp": lambda L: makemore.build(L, "mlp"), "bigram": bigram.build}
    return builders[model](L)


def measure_user_models(models=MODELS, threads=THREADS, rounds: int = 8,
                        target_s: float = 0.2) -> dict:
    """Rows per (model, threads): ms per iteration of each library with 95 % CIs,
    minitorch/torch and (nanogpt) user model/own GPT ratios, reliability, verdicts."""
    from . import measure as M
    from . import stats

    rows, info = [], {}
    for model in models:
        for n in threads:
            libs = [lib for lib in LIBS if lib != "minitorch_gpt" or model == "nanogpt"]
            jobs = [M.Job(lib, "benchmarks.bench_user_models:make_step", [lib, model, n],
                          torch=lib == "torch") for lib in libs]
            out = M.measure(jobs, rounds=rounds, baseline="minitorch", target_s=target_s,
                            info=not info)
            info = info or out["info"]
            row = {"model": model, "threads": n, "rounds": rounds,
                   "ms": {k: t["ms"]["median"] for k, t in out["times"].items()},
                   "first_loss": out["first"], "outside_load": out["load"]}
            for peer, key, limit in (("torch", "vs_torch", TARGETS[model]),
                                     ("minitorch_gpt", "vs_own_gpt", OWN_GPT_TARGET)):
                if peer not in out["ratios"]:
                    continue
                r = out["ratios"][peer]
                est = stats.Estimate(r["wall"]["median"], r["wall"]["lo"], r["wall"]["hi"],
                                     rounds)
                row[f"ratio_{key}"] = r["wall"]["median"]
                row[f"ratio_{key}_ci"] = [r["wall"]["lo"], r["wall"]["hi"]]
                row[f"reliable_{key}"] = bool(r["reliability"]["reliable"])
                row[f"verdict_{key}"] = (stats.target_verdict(est, limit, r["reliability"])
                                         or "no verdict: " + stats.unreliable_text(
                                             {**r["reliability"], "load": out["load"]}))
            rows.append(row)
    return {"info": info, "rows": rows}


class UserModelStep:
    """One training iteration, timed by asv (threads: MINITORCH_BENCH_THREADS)."""

    params = (list(MODELS), list(LIBS))
    param_names = ["model", "lib"]
    timeout = 300

    def setup(self, model, lib):
        self.step = make_step(lib, model)
        self.step()

    def time_train_iteration(self, model, lib):
        self.step()


class UserModelRatio:
    """minitorch/torch per iteration, and the nanoGPT model over minitorch's own GPT, from the
    harness at one thread and at every core; nan when not measured reliably."""

    params = (list(MODELS), THREADS)
    param_names = ["model", "threads"]
    timeout = 900
    rounds = int(os.environ.get("MINITORCH_BENCH_ROUNDS", "8"))  # the smoke run sets 2

    def setup_cache(self):
        rows = measure_user_models(rounds=self.rounds)["rows"]
        return {(r["model"], r["threads"]): r for r in rows}

    setup_cache.timeout = 1800

    def _ratio(self, rows, model, threads, key):
        row = rows[(model, threads)]
        if not row.get(f"reliable_{key}"):
            return float("nan")  # no such peer, or not measured reliably
        return row[f"ratio_{key}"]

    def track_user_ratio_vs_torch(self, rows, model, threads):
        return self._ratio(rows, model, threads, "vs_torch")

    track_user_ratio_vs_torch.unit = "minitorch/torch"

    def track_user_ratio_vs_own_gpt(self, rows, model, threads):
        return self._ratio(rows, model, threads, "vs_own_gpt")

    track_user_ratio_vs_own_gpt.unit = "user model/minitorch GPT"


def format_rows(rows: list[dict]) -> str:
    def ratio(r, key):
        if f"ratio_{key}" not in r:
            return f"{'n/a':>20}"
        lo, hi = r[f"ratio_{key}_ci"]
        ci = f"[{lo:.2f},{hi:.2f}]" if lo is not None and hi is not None else "[no CI]"
        return f"{r[f'ratio_{key}']:.2f} {ci}" + ("" if r[f"reliable_{key}"] else "*")

    lines = [f"{'model':<22}{'thr':>4}{'mt ms':>9}{'torch ms':>9}{'own ms':>9}  "
             f"{'mt/torch [95% CI]':<22}{'user/own GPT':<22}verdicts"]
    for r in rows:
        ms = r["ms"]
        own = ms.get("minitorch_gpt")
        verdicts = ", ".join(f"{k}: {r[f'verdict_{k}']}" for k in ("vs_torch", "vs_own_gpt")
                             if f"verdict_{k}" in r)
        lines.append(f"{r['model']:<22}{r['threads']:>4}{ms['minitorch']:9.1f}"
                     f"{ms['torch']:9.1f}{own if own is None else round(own, 1)!s:>9}  "
                     f"{ratio(r, 'vs_torch'):<22}{ratio(r, 'vs_own_gpt'):<22}{verdicts}")
    lines.append("ms per training iteration, medians; * = not measured reliably: no verdict")
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="user-written models: minitorch vs torch eager")
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--threads", nargs="+", type=int, default=THREADS)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--write", action="store_true",
                    help="store the rows in reports/artifacts/bench.json (key user_models)")
    args = ap.parse_args(argv)
    out = measure_user_models(args.models, args.threads, rounds=args.rounds)
    print(format_rows(out["rows"]))
    if args.write:
        from artifacts import read_json, write_json

        bench = read_json("bench.json") or {}
        bench["user_models"] = out
        print("wrote", write_json("bench.json", bench))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
