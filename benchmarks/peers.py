"""minitorch, PyTorch eager and hand-written NumPy: the step each worker runs, and the peer
table built from the harness (benchmarks/measure.py: one process per implementation, interleaved
rounds, per-round ratios with 95 % intervals, outside-load checks). Used by compare_peers.py and
bench_peers.py.
"""

from __future__ import annotations

import os
import sys

from . import measure as M
from . import stats
from .measure import Job

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMPLS = ("minitorch", "torch", "numpy")
MALLOC_MODES = M.MALLOC_MODES


def tune_malloc() -> None:
    """Keep freed large temporaries in the heap (glibc mallopt), as `minitorch train` does."""
    from minitorch.allocator import tune_allocator

    if not tune_allocator():
        raise RuntimeError("mallopt refused the allocator settings")


def supports(impl: str, preset: str) -> bool:
    """The hand-written NumPy peer covers LayerNorm + learned-position presets only."""
    if impl != "numpy":
        return True
    from minitorch.models.gpt import PRESETS

    cfg = PRESETS[preset]
    return cfg.norm == "layernorm" and cfg.pos == "learned"


def make_step(impl: str, preset: str, dtype: str, B: int, T: int, workers: int = 1,
              replay: bool = False):
    """A zero-argument callable running one training step of `impl` from the shared weights.
    workers > 1 splits minitorch's and NumPy's batch across that many threads, each with a
    one-thread BLAS (torch keeps its intra-op threads: its own way to use the cores); replay
    runs minitorch's step through minitorch.replay."""
    from . import harness as H

    cfg = H.config(preset)
    if workers > 1 and impl != "torch":
        H.fix_threads(1)
    if impl == "minitorch":
        return H.MinitorchStep(cfg, dtype, B, T, workers=workers, replay=replay)
    arrays = H.named_arrays(cfg, dtype)
    idx, targets = H.batch(cfg.vocab_size, B, T)
    if impl == "numpy":
        from .numpy_peer import NumpyGPT

        model = NumpyGPT(cfg, arrays, H.DTYPES[dtype], lr=H.LR)
        if workers > 1:
            model.parallel(workers)
            return lambda: model.parallel_step(idx, targets)
        return lambda: model.step(idx, targets)
    if impl == "torch":
        return _torch_step(cfg, arrays, dtype, idx, targets)
    raise ValueError(f"unknown implementation {impl!r}; choose from {IMPLS}")


def torch_reference():
    """verification/torch_reference.py of this checkout, loaded by path: when asv benchmarks an
    older commit from a worktree, that tree's verification/ may lack it or differ."""
    import importlib.util

    name = "_bench_torch_reference"
    if name not in sys.modules:
        path = os.path.join(ROOT, "verification", "torch_reference.py")
        spec = importlib.util.spec_from_file_location(name, path)
        sys.modules[name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[name]


# The PyTorch peer at its best eager form for this model (measured on 2-core AMD EPYC, seed
# preset, batch 32 x 64, see README "The PyTorch peer"): fused Q/K/V Linear and SDPA (as the twin
# in verification/torch_reference.py is written), zero_grad(set_to_none=True), torch threads =
# BLAS threads, and the Adam implementation below. TORCH_ADAM selects another for experiments.
TORCH_ADAM = os.environ.get("MINITORCH_BENCH_TORCH_ADAM", "foreach")  # for-loop|foreach|fused
TORCH_ADAM_KW = {"for-loop": {"foreach": False}, "foreach": {"foreach": True},
                 "fused": {"fused": True}}


def _torch_step(cfg, arrays, dtype, idx, targets, adam: str | None = None):
    import dataclasses

    import torch

    ref = torch_reference()
    model = ref.TorchGPT(dataclasses.asdict(cfg)).to(getattr(torch, dtype))
    ref.load_named_arrays(model, arrays)
    adam = adam or TORCH_ADAM
    if adam not in TORCH_ADAM_KW:
        raise ValueError(f"MINITORCH_BENCH_TORCH_ADAM must be one of {sorted(TORCH_ADAM_KW)}")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, **TORCH_ADAM_KW[adam])
    idx_t, tgt_t = torch.from_numpy(idx), torch.from_numpy(targets)

    def step():
        opt.zero_grad(set_to_none=True)
        _, loss = model(idx_t, tgt_t)
        loss.backward()
        opt.step()
        return float(loss.item())

    return step


def torch_variant(preset: str, dtype: str, B: int, T: int, adam: str):
    """A factory for the PyTorch-variant experiment (`python -m benchmarks.torch_variants`)."""
    from . import harness as H

    cfg = H.config(preset)
    idx, targets = H.batch(cfg.vocab_size, B, T)
    return _torch_step(cfg, H.named_arrays(cfg, dtype), dtype, idx, targets, adam)


# ---- coordinator side -------------------------------------------------------------------------
def measure(configs, rounds: int = 10, steps: int = 1, warmup: int = 2, malloc: str = "default",
            B: int = 32, T: int = 64, target_s: float = 0.2, log=None, workers: int = 1,
            replay: bool = False, **kw) -> dict:
    """Time minitorch and its peers with the harness (measure.py) for each (preset, dtype).

    Fresh workers per config (glibc's dynamic mmap threshold remembers the largest block freed
    so far, so a process that ran a bigger model first would fault less). Returns {"info": run
    metadata of each worker, "rows": one row per config}: per implementation the median ms/step
    and its 95 % CI, minitorch/peer ratios (median over rounds of the per-round ratio) with
    CIs, the same from process CPU time under "cpu", outside load, reliability."""
    info, rows = {}, []
    for preset, dtype in configs:
        jobs = [Job(i, "benchmarks.peers:make_step", [i, preset, dtype, B, T, workers, replay],
                    malloc,
                    torch=i == "torch") for i in IMPLS if supports(i, preset)]
        out = M.measure(jobs, rounds=rounds, baseline="minitorch", target_s=target_s,
                        min_steps=steps, warmup=warmup, info=not info, **kw)
        info = info or out["info"]
        _check_same_model(preset, dtype, out["first"])
        row = {**to_row(out, preset, dtype, B, T, malloc), "workers": workers, "replay": replay}
        rows.append(row)
        if log:
            log(row)
    return {"info": info, "rows": rows}


def to_row(out: dict, preset: str, dtype: str, B: int, T: int, malloc: str) -> dict:
    """The harness's result as one bench.json row (the layout reports/sections/peers.py reads)."""
    times, ratios = out["times"], out["ratios"]
    row = {"preset": preset, "dtype": dtype, "batch": B, "block": T, "malloc": malloc,
           "rounds": out["rounds"], "steps_per_sample": out["steps_per_sample"],
           "ms_per_step": {i: t["ms"]["median"] for i, t in times.items()},
           "ms_ci": {i: [t["ms"]["lo"], t["ms"]["hi"]] for i, t in times.items()},
           "cpu": {"ms_per_step": {i: t["cpu_ms"]["median"] for i, t in times.items()}},
           "samples_ms": {i: t["samples_ms"] for i, t in times.items()},
           "outside_load_cores": {i: t["loads"] for i, t in times.items()},
           "faults_per_step": {i: t["faults"] for i, t in times.items()},
           "initial_loss": out["first"], "outside_load": out["load"],
           "max_load": out["max_load"], "max_ci": out["max_ci"],
           "loadavg_1min": os.getloadavg()[0]}
    rel = {i: t["reliability"] for i, t in times.items()}
    for peer, r in ratios.items():
        row[f"ratio_vs_{peer}"] = r["wall"]["median"]
        row[f"ratio_vs_{peer}_ci"] = [r["wall"]["lo"], r["wall"]["hi"]]
        row["cpu"][f"ratio_vs_{peer}"] = r["cpu"]["median"]
        row["cpu"][f"ratio_vs_{peer}_ci"] = [r["cpu"]["lo"], r["cpu"]["hi"]]
        rel[f"ratio_vs_{peer}"] = r["reliability"]
    row["reliability"] = rel
    row["reliable"] = all(r["reliable"] for r in rel.values())
    worst = max(rel.values(), key=lambda r: (not r["reliable"], r["ci_half_width"] or 9e9))
    row["unreliable"] = "" if row["reliable"] else stats.unreliable_text(
        {**worst, "load": out["load"]})
    return row


TARGETS = {  # the measured configuration: seed preset, batch 32, block 64, 2 threads
    ("seed", "float32"): {"numpy": 1.1, "torch": 1.3},
    ("seed", "float64"): {"numpy": 1.1, "torch": 1.5},
}


def add_verdicts(row: dict, targets: dict = TARGETS) -> dict:
    """row["verdict"] = {peer: "meets" | "misses" | "undecided" | None}: None (no verdict) when
    the ratio was not measured reliably; "undecided" when its interval straddles the target."""
    target = targets.get((row["preset"], row["dtype"]))
    if not target:
        return row
    verdicts = {}
    for peer, limit in target.items():
        key = f"ratio_vs_{peer}"
        if key not in row:
            continue
        lo, hi = row.get(f"{key}_ci") or (None, None)
        est = stats.Estimate(row[key], lo, hi, row["rounds"])
        verdicts[peer] = stats.target_verdict(est, limit, row["reliability"][key])
    row["target"] = target
    row["verdict"] = verdicts
    return row


def _check_same_model(preset, dtype, losses) -> None:
    """The first-step losses from the shared weights and batch must agree, or the timings
    compare different computations."""
    tol = 1e-9 if dtype == "float64" else 1e-4
    ref = losses["minitorch"]
    bad = {i: v for i, v in losses.items() if abs(v - ref) > tol * max(1.0, abs(ref))}
    if bad:
        raise RuntimeError(f"{preset}/{dtype}: peers disagree on the first loss: minitorch {ref}, "
                           f"{bad} (tolerance {tol})")


if __name__ == "__main__":
    sys.exit("the peer workers are benchmarks.measure workers: python -m benchmarks.compare_peers")
