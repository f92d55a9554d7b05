"""Issue 31's tables from asv's stored results: per-op-family dispatch (benchmarks/
bench_dispatch.py) and user-written models (benchmarks/bench_user_models.py), minitorch against
torch eager, with no ratio shown where the harness did not measure it reliably."""

from __future__ import annotations

from .. import asv_history
from .. import parts as P

NO_VERDICT = "no verdict (not measured reliably)"


def _latest(hist: asv_history.AsvHistory, bench: str) -> dict[str, asv_history.Point]:
    """{params combo: latest point} of the benchmark whose name ends with `bench`."""
    order = {c: i for i, (_, c) in enumerate(hist.commits())}
    out: dict[str, asv_history.Point] = {}
    for (name, combo), pts in hist.series.items():
        if name.endswith(bench) and pts:
            out[combo] = max(pts, key=lambda p: order[p.commit])
    return out


def _us(point: asv_history.Point | None) -> str:
    return "—" if point is None or point.value is None else f"{point.value * 1e6:.4g} µs"


def _ms(point: asv_history.Point | None) -> str:
    return "—" if point is None or point.value is None else f"{point.value * 1e3:.4g} ms"


def _ratio(point: asv_history.Point | None, target: float | None = None) -> dict:
    if point is None:
        return P.cell("—")
    if point.value is None:  # nan: the harness found the ratio unreliable (or no such peer)
        return P.cell(NO_VERDICT, "warn")
    cls = "" if target is None else "pass" if point.value <= target else "warn"
    return P.cell(f"{point.value:.3g}", f"num {cls}".strip())


def parts(hist: asv_history.AsvHistory) -> list[dict]:
    out = []
    fwd, fwd_bwd = (_latest(hist, f"Dispatch.time_dispatch_{m}")
                    for m in ("forward", "forward_backward"))
    ratio = _latest(hist, "DispatchRatio.track_dispatch_ratio_vs_torch")
    if fwd or ratio:
        rows = []
        for combo in sorted(set(fwd) | {c.rsplit(", ", 1)[0] for c in ratio}):
            family, _, size = combo.partition(", ")
            rows.append([family, size, P.cell(_us(fwd.get(combo)), "num"),
                         _ratio(ratio.get(f"{combo}, forward"), 1.0),
                         P.cell(_us(fwd_bwd.get(combo)), "num"),
                         _ratio(ratio.get(f"{combo}, forward_backward"), 1.0)])
        out.append(P.table(
            "Dispatch per op family: minitorch vs torch eager (asv)",
            ["family", "size", "minitorch forward (all ops once)", "forward ÷ torch",
             "minitorch forward + backward", "forward + backward ÷ torch"], rows,
            collapsed=len(rows) > 30,
            note="Times: asv's own timing of one call of each op of the family. Ratios: the "
                 "harness (one worker per library, interleaved rounds, outside-load checks), "
                 "the family's summed per-call times; target ≤ 1.0 at 0-d and (8,). Per-op "
                 "rows with NumPy's own call: python -m benchmarks.bench_dispatch."))
    steps = _latest(hist, "UserModelStep.time_train_iteration")
    user = {k: _latest(hist, f"UserModelRatio.track_user_ratio_vs_{k}")
            for k in ("torch", "own_gpt")}
    if steps or user["torch"]:
        models = sorted({c.split(", ")[0] for c in [*steps, *user["torch"]]})
        threads = sorted({c.split(", ")[1] for c in user["torch"]}, key=int)
        rows = []
        for m in models:
            target = 1.5 if m == "bigram" else 1.0
            rows.append([m, *[P.cell(_ms(steps.get(f"{m}, {lib}")), "num")
                              for lib in ("minitorch", "torch", "minitorch_gpt")],
                         *[_ratio(user["torch"].get(f"{m}, {n}"), target) for n in threads],
                         *[_ratio(user["own_gpt"].get(f"{m}, {n}"), 1.1) if m == "nanogpt"
                           else "—" for n in threads]])
        out.append(P.table(
            "User-written models: minitorch vs torch eager per training iteration (asv)",
            ["model", "minitorch", "torch", "minitorch's own GPT",
             *[f"÷ torch, {n} thread(s)" for n in threads],
             *[f"÷ own GPT, {n} thread(s)" for n in threads]], rows,
            note="benchmarks/user_models/: each model written once against torch or "
                 "minitorch. Times: asv, MINITORCH_BENCH_THREADS threads. Ratios: the "
                 "harness; targets ≤ 1.0 × torch (the bigram's batching loop ≤ 1.5 ×), the "
                 "nanoGPT-style model ≤ 1.1 × minitorch's own GPT."))
    return out
