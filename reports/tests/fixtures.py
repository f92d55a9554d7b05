"""Synthetic inputs for the report tests, shaped like what the suites, the trainer, the tracer
and asv write. The numbers are made up; only their layout matters here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

OPS = ["add", "mul", "matmul", "softmax"]
# The registry as the verification suite records it into verification.json: some ops the
# fixture never gradchecks, and two with no gradient at all.
REGISTRY = {"primitives": sorted(OPS + ["exp", "argmax", "equal"]),
            "composites": ["layer_norm_composite"], "non_differentiable": ["argmax", "equal"]}
DECLARED_XFAILS = {"exp": {"torch_grad_f32:(2,3)": "float32 cancellation near 0 (made up)"}}
PRESETS = ["seed", "gpt2-mini"]
XFAIL_TEST = "verification/test_gradcheck.py::test_gradient[softmax[(2,3,4)]]"


def _dump(path: Path, payload) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1))


def verification_records(rng: np.random.Generator) -> list[dict]:
    recs = []

    def rec(check, op, sample, max_abs, tol, status="pass", test="", **extra):
        recs.append({"check": check, "op": op, "sample": sample, "max_abs": max_abs,
                     "max_rel": max_abs * 10 if max_abs is not None else None, "tol": tol,
                     "status": status, "test": test or f"verification/test_x.py::t[{op}]",
                     **extra})

    for op in OPS:
        for sample in ("(3,)", "(2,3)", "(3,1)x(1,4)"):
            rec("gradcheck", op, sample, float(rng.uniform(1e-12, 1e-9)),
                {"atol": 1e-6, "rtol": 1e-5, "mode": "full"})
            rec("forward", op, sample, 0.0, {"atol": 1e-12})
            rec("torch_grad_f32", op, sample, float(rng.uniform(1e-8, 1e-6)),
                {"atol": 1e-4, "rtol": 1e-3})
    rec("gradcheck", "softmax", "(2,3,4)", 3e-3, {"atol": 1e-6, "rtol": 1e-5}, "fail",
        test=XFAIL_TEST)
    rec("gradcheck", "matmul", "(2,3)x(3,4)", 2e-2, {"atol": 1e-6, "rtol": 1e-5}, "fail",
        test="verification/test_gradcheck.py::test_gradient[matmul[(2,3)x(3,4)]]")
    for preset in PRESETS:
        for name in ("logits", "loss", "wte.weight", "wpe.weight", "h.0.attn.c_attn.weight",
                     "lm_head.weight"):
            kind = name if name in ("logits", "loss") else "grad"
            rec(f"model_{kind}_f64", name, "B2xT8", float(rng.uniform(1e-16, 1e-13)), 1e-9,
                preset=preset)
            rec(f"model_{kind}_f32", name, "B2xT8", float(rng.uniform(1e-7, 1e-5)),
                "atol=0.0001,rtol=0.001", preset=preset)
    for case in ("adam_step", "adamw_step"):
        for step in range(1, 21):
            rec(case, "quadratic", step, 1e-16 * step ** 1.5, 1e-8, loss_abs=0.0)
    rec("clip_grad_norm", "seed_model", "max_norm=0.5x", 1e-15, 1e-12)
    rec("resume_equivalence", "seed", "10+10", 0.0, 0.0)
    rec("kv_cache_f64", "seed", "chunks=3,T=16", 2e-14, 1e-10)
    return recs


def write_fixture_artifacts(root: Path, seed: int = 0) -> dict[str, Path]:
    """Write every input the report reads under root; returns the folders to pass to the build."""
    rng = np.random.default_rng(seed)
    art = root / "artifacts"
    art.mkdir(parents=True, exist_ok=True)
    _dump(art / "verification.json", {"records": verification_records(rng),
                                      "python": "3.11.7", "numpy": "2.4.6",
                                      "registry": REGISTRY, "declared_xfails": DECLARED_XFAILS})
    _dump(art / "model_parity.json", {
        "tolerances": {"float64": {"atol": 1e-9, "rtol": 0.0}},
        "results": {f"{p}/f64/B2xT8": {"preset": p, "dtype": "f64", "rows": [
            {"tensor": "wte.weight", "shape": [65, 64], "max_abs": 1e-15, "max_rel": 1e-13,
             "pass": True}]} for p in PRESETS}})
    _dump(art / "optim_parity.json", {
        "steps": 20, "param_atol": 1e-8,
        "runs": {"adam/quadratic": {"case": "adam", "max_abs": [1e-16 * s for s in range(1, 21)]}},
        "schedules": {"constant/n50": {"max_abs": 0.0, "steps": 50}}})
    _dump(art / "mutation.json", {
        "killed": 41, "survived": 2, "total": 43, "command": "python -m verification.mutate_vjps",
        "ops": ["argmax", "mul", "softmax"],
        "table": {"mul": {"killed": 40, "survived": 1, "other": 0, "commit": "1" * 40},
                  "softmax": {"killed": 1, "survived": 1, "other": 0, "commit": "2" * 40}},
        "runs": [{"commit": "1" * 40, "commit_inferred": True, "ops": ["argmax", "mul"],
                  "killed": 40, "survived": 1, "command": "python -m verification.mutate_vjps"},
                 {"commit": "2" * 40, "ops": ["softmax"], "killed": 1, "survived": 1,
                  "command": "python -m verification.mutate_vjps --ops softmax"}],
        "mutants": [
            {"op": "mul", "desc": "swap returned gradients", "line": 12, "status": "survived",
             "commit": "1" * 40},
            *[{"op": "mul", "mutation": "grad_a = grad_out * a", "status": "killed",
               "commit": "1" * 40}] * 40,
            {"op": "softmax", "desc": "drop in-place update: d -= s  ->  pass", "line": 7,
             "status": "killed", "commit": "2" * 40},
            {"op": "softmax", "desc": "axis=-1 -> 0", "line": 9, "status": "survived",
             "commit": "2" * 40}]})
    steps = list(range(300))
    flat = [60 + 5 * (1 - math.exp(-s / 20)) + rng.normal(0, 0.05) for s in steps]
    heap = [12 * 2**20 + (s < 5) * s * 2**20 for s in range(30)]
    _dump(art / "memory.json", {
        "workload": {"preset": "seed", "dtype": "float64", "blas_threads": 1},
        "rss": {"gc_enabled": {"steps": steps, "rss_mb": flat, "slope_mb_per_step": 0.0012,
                               "slope_max_mb_per_step": 0.05, "flat": True,
                               "peak_rss_mb": 65.2},
                "leak_control_gc_disabled": {"steps": list(range(60)),
                                             "rss_mb": [60 + 7.5 * s for s in range(60)],
                                             "slope_mb_per_step": 7.5, "flat": False}},
        "traced": {"gc_enabled": {"steps": list(range(30)), "traced_heap_bytes": heap,
                                  "heap_change_bytes_after_warmup": [0] * 20},
                   "leak_control_gc_disabled": {"steps": list(range(60)), "traced_heap_bytes": [
                       12 * 2**20 + s * 7 * 2**20 for s in range(60)]}},
        "peak": {"step": {"traced_peak_mb": 41.0, "budget_mb": 36.0, "ratio": 41 / 36,
                          "factor": 1.25},
                 "leak_control_gc_disabled": {"traced_peak_mb": 300.0, "budget_mb": 10.0,
                                              "factor": 1.25},
                 "rss": {"peak_rss_mb_gc_enabled": 65.2, "target_mb": 200}}})
    latest = _peer_run(threads=2, sha="e" * 40, factor=1.0)
    _dump(art / "bench.json", {
        "peers": latest,  # compare_peers stores the latest run twice: here and by thread count
        "peers_by_threads": {"2": latest, "1": _peer_run(threads=1, sha="f" * 40, factor=1.5)},
        "scaling": {"float32": {"dtype": "float32", "base": {"batch": 32, "seq": 64}, "rows": [
            {"axis": "batch", "values": [8, 16, 32], "step_ms": [5.0, 9.5, 19.0], "slope": 0.98},
            {"axis": "seq", "values": [16, 32, 64], "step_ms": [4.0, 8.5, 19.0], "slope": 1.1,
             "attention_core_ms": [0.2, 0.8, 3.2], "rest_ms": [3.8, 7.7, 15.8],
             "attention_slope": 2.0, "rest_slope": 1.03}]}},
        "profile": {"seed/float32/default": {
            "preset": "seed", "dtype": "float32", "malloc": "default", "ms_per_step": 20.0,
            "phases_ms": {"forward": 7.0, "backward": 11.0, "adam": 2.0, "step": 20.0},
            "ops": [{"scope": "linear", "op": "matmul", "fwd_ms": 3.0, "bwd_ms": 6.0,
                     "calls": 13},
                    {"scope": "", "op": "softmax", "fwd_ms": 0.5, "bwd_ms": 0.7, "calls": 3}],
            "cprofile_top": [{"function": "graph.py:10(backward)", "tottime_ms": 1.0}]}}})
    T, text = 8, "To be, o"
    _dump(art / "trace.json", {
        "text": text, "tokens": list(text), "checkpoint": "runs/main",
        "attention": [{"layer": layer, "head": h, "probs": _causal(rng, T)}
                      for layer in range(2) for h in range(2)],
        "ops": [{"op": "matmul", "out_shape": [2, 8, 64], "dtype": "float32", "ms": 0.12}]})
    run = art / "runs" / "main"
    _dump(run / "config.json", {"train": {"preset": "seed", "iters": 300, "seed": 1337},
                                "model": {"n_layer": 3, "n_embd": 64}, "params": 161985})
    lines = [{"kind": "step", "step": s, "loss": 4.2 * math.exp(-s / 100) + 1.5, "lr": 3e-4}
             for s in range(300)]
    lines += [{"kind": "eval", "step": s, "train": 4.2 * math.exp(-s / 100) + 1.5,
               "val": 4.2 * math.exp(-s / 100) + 1.6, "lr": 3e-4, "time": s * 0.05}
              for s in (0, 100, 200, 299)]
    lines.append({"kind": "finished", "step": 300})  # the trainer's last row of a whole run
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    _dump(run / "samples.json", {"before": {"step": 0, "text": "xq&Z!!\nkk"},
                                 "after": {"step": 300, "text": "To be or not\nthe king"}})
    _junit(art / "junit-verification.xml", [
        ("verification.test_gradcheck", "test_gradient[add[(3,)]]", None),
        ("verification.test_gradcheck", "test_gradient[softmax[(2,3,4)]]",
         ("skipped", "pytest.xfail", "float64 cancellation in this shape")),
        ("verification.test_gradcheck", "test_gradient[matmul[(2,3)x(3,4)]]",
         ("failure", None, "AssertionError: matmul gradient off by 2e-2"))])
    _junit(art / "junit-memory.xml", [("memory.test_flat", "test_mem_rss_flat", None)])
    _dump(art / "main_job.json", {"command": "python -m reports.main_job --out reports/out",
                                  "finished": "2026-01-01 00:00:00 UTC", "seeds": {"train": 1337},
                                  "steps": [
                                      {"name": "train", "status": "ok", "seconds": 60.0},
                                      {"name": "verification", "status": "failed", "seconds": 90,
                                       "detail": "pytest exit code 1", "output": "1 failed"}]})
    asv = root / "asv-results"
    _asv_results(asv, rng)
    return {"artifacts": art, "asv_results": asv}


def _peer_run(threads: int, sha: str, factor: float) -> dict:
    """One compare_peers run: per preset, dtype and allocator, ms per step and the ratios."""
    rows = []
    for p in PRESETS:
        for d, ms in (("float32", 25.0), ("float64", 55.0)):
            for malloc, tuned in (("default", 1.0), ("tuned", 0.9)):
                r_torch, r_numpy = round(1.2 * factor * tuned, 4), round(1.05 * factor * tuned, 4)
                rows.append({
                    "preset": p, "dtype": d, "malloc": malloc, "batch": 32, "block": 64,
                    "ms_per_step": {"minitorch": ms, "torch": ms / r_torch,
                                    "numpy": ms / r_numpy},
                    "ratio_vs_torch": r_torch, "ratio_vs_torch_iqr": [r_torch - 0.1,
                                                                      r_torch + 0.1],
                    "ratio_vs_numpy": r_numpy, "ratio_vs_numpy_iqr": [r_numpy - 0.05,
                                                                      r_numpy + 0.05],
                    "cpu": {"ratio_vs_torch": r_torch + 0.02, "ratio_vs_numpy": r_numpy + 0.01},
                    "loadavg_1min": 1.5})
    return {"rounds": 3, "steps": 2, "threads": threads,
            "targets": {"seed/float32": {"numpy": 1.1, "torch": 1.3}},
            "info": {"minitorch": {"blas_threads": threads, "seed": 0, "git_sha": sha,
                                   "cores": 2}}, "rows": rows}


def _causal(rng: np.random.Generator, T: int) -> list[list[float]]:
    z = rng.normal(size=(T, T))
    z[np.triu_indices(T, 1)] = -np.inf
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)).tolist()


def _junit(path: Path, cases: list[tuple[str, str, tuple | None]]) -> None:
    body = []
    for cls, name, outcome in cases:
        inner = ""
        if outcome:
            tag, kind, message = outcome
            kind_attr = f' type="{kind}"' if kind else ""
            inner = f'<{tag}{kind_attr} message="{message}"/>'
        body.append(f'<testcase classname="{cls}" name="{name}" time="0.1">{inner}</testcase>')
    path.write_text('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" '
                    f'tests="{len(cases)}" time="1.5">{"".join(body)}</testsuite></testsuites>')


def _asv_results(root: Path, rng: np.random.Generator) -> None:
    """Three commits of asv 0.6 results: a train step per (preset, dtype), per-op fwd/bwd."""
    columns = ["result", "params", "version", "started_at", "duration"]
    _dump(root / "benchmarks.json", {
        "bench_model.TrainStep.time_train_step": {"param_names": ["preset", "dtype"],
                                                  "type": "time", "unit": "seconds"},
        "bench_ops.OpBench.time_op_fwd": {"param_names": ["op", "size"], "type": "time",
                                          "unit": "seconds"},
        "bench_ops.OpBench.time_op_bwd": {"param_names": ["op", "size"], "type": "time",
                                          "unit": "seconds"},
        "bench_model.track_ratio_vs_torch": {"param_names": [], "type": "track", "unit": "ratio"},
        "version": 2})
    _dump(root / "ci" / "machine.json", {"machine": "ci", "num_cpu": "2"})
    presets, dtypes = ["'seed'", "'gpt2-mini'"], ["'float32'", "'float64'"]
    ops, sizes = ["'add'", "'matmul'"], ["64", "256"]
    for i, commit in enumerate(["a" * 40, "b" * 40, "c" * 40]):
        results = {
            "bench_model.TrainStep.time_train_step": [
                [0.03 * (1 + 0.1 * i) * (j + 1) for j in range(4)], [presets, dtypes], "v", 0, 1.0],
            "bench_ops.OpBench.time_op_fwd": [
                [1e-5 * (j + 1) for j in range(4)], [ops, sizes], "v", 0, 1.0],
            "bench_ops.OpBench.time_op_bwd": [
                [2e-5 * (j + 1) for j in range(4)], [ops, sizes], "v", 0, 1.0],
            "bench_model.track_ratio_vs_torch": [[1.3 - 0.05 * i], [], "v", 0, 1.0],
        }
        _dump(root / "ci" / f"{commit[:8]}-existing-py.json", {
            "commit_hash": commit, "env_name": "existing-py", "date": 1_700_000_000_000 + i * 1000,
            "params": {"machine": "ci"}, "result_columns": columns, "results": results,
            "version": 2})


def build_page(root: Path, monkeypatch, extra: dict[str, object]) -> str:
    """The report's HTML built from the fixture artifacts plus `extra` (file name -> JSON payload;
    None leaves the file out)."""
    from reports.build import build_report

    dirs = write_fixture_artifacts(root)
    for name, payload in extra.items():
        if payload is not None:
            (dirs["artifacts"] / name).write_text(json.dumps(payload))
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    return build_report(root / "out", dirs["artifacts"], None, dirs["asv_results"]).read_text()
