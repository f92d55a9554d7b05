"""asv: per-op dispatch cost (issue 31), minitorch against torch eager and NumPy's own call.

Each op family's calls at 0-d, (8,), (64, 64) and (B, T, C) sizes, forward without a graph and
forward + backward. `Dispatch.time_dispatch_*` is asv's own timing of minitorch (history);
`DispatchRatio` takes the ratios from the harness (benchmarks/measure.py: one worker per
library, interleaved rounds, load checks; nan when not measured reliably).
`python -m benchmarks.bench_dispatch [--write]` prints the per-op table (and stores it).
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from . import stats
from .harness import SEED

SIZES = {"0d": (), "8": (8,), "64x64": (64, 64), "12x64x128": (12, 64, 128)}
MODES = ("forward", "forward_backward")
REPS = {"0d": 50, "8": 50, "64x64": 10, "12x64x128": 2}  # calls per op per step
LIBS = ("minitorch", "torch", "numpy")


def _gelu(L):
    return lambda d: L.nn.functional.gelu(d["x"])


# name -> (family, call(L) -> f(inputs) for minitorch/torch, NumPy's call or None, sizes left out)
CASES = {
    "add": ("arithmetic", lambda L: lambda d: d["x"] + d["y"], lambda d: np.add(d["x"], d["y"]),
            ()),
    "add_number": ("arithmetic", lambda L: lambda d: d["x"] + 2.0, lambda d: d["x"] + 2.0, ()),
    "mul": ("arithmetic", lambda L: lambda d: d["x"] * d["y"], lambda d: d["x"] * d["y"], ()),
    "mul_number": ("arithmetic", lambda L: lambda d: d["x"] * 2.0, lambda d: d["x"] * 2.0, ()),
    "div": ("arithmetic", lambda L: lambda d: d["x"] / d["y"], lambda d: d["x"] / d["y"], ()),
    "div_number": ("arithmetic", lambda L: lambda d: d["x"] / 2.0, lambda d: d["x"] / 2.0, ()),
    "exp": ("pointwise", lambda L: lambda d: d["x"].exp(), lambda d: np.exp(d["x"]), ()),
    "tanh": ("pointwise", lambda L: lambda d: d["x"].tanh(), lambda d: np.tanh(d["x"]), ()),
    "relu": ("pointwise", lambda L: lambda d: d["x"].relu(), lambda d: np.maximum(d["x"], 0),
             ()),
    "gelu": ("pointwise", _gelu, None, ()),
    "sum": ("reduce", lambda L: lambda d: d["x"].sum(), lambda d: d["x"].sum(), ()),
    "mean": ("reduce", lambda L: lambda d: d["x"].mean(), lambda d: d["x"].mean(), ()),
    "max_dim": ("reduce", lambda L: lambda d: d["x"].max(dim=-1).values,
                lambda d: d["x"].max(axis=-1), ("0d",)),
    "softmax": ("reduce", lambda L: lambda d: d["x"].softmax(dim=-1), None, ("0d",)),
    "reshape": ("movement", lambda L: lambda d: d["x"].reshape(-1),
                lambda d: d["x"].reshape(-1), ()),
    "transpose": ("movement", lambda L: lambda d: d["x"].transpose(0, -1),
                  lambda d: d["x"].swapaxes(0, -1), ("0d",)),
    "expand": ("movement", lambda L: lambda d: d["x"].expand(2, *d["x"].shape),
               lambda d: np.broadcast_to(d["x"], (2, *d["x"].shape)), ()),
    "cat": ("movement", lambda L: lambda d: L.cat([d["x"], d["y"]]),
            lambda d: np.concatenate([d["x"], d["y"]]), ("0d",)),
    "stack": ("movement", lambda L: lambda d: L.stack([d["x"], d["y"]]),
              lambda d: np.stack([d["x"], d["y"]]), ()),
    "slice_int": ("indexing", lambda L: lambda d: d["x"][2:6], lambda d: d["x"][2:6], ("0d",)),
    "slice_0d_tensor": ("indexing", lambda L: lambda d: d["x"][d["s"]:d["s"] + 4],
                        lambda d: d["x"][d["s"]:d["s"] + 4], ("0d",)),
    "fancy_index": ("indexing", lambda L: lambda d: d["x"][d["idx"]],
                    lambda d: d["x"][d["idx"]], ("0d",)),
    "masked_fill": ("indexing", lambda L: lambda d: d["x"].masked_fill(d["mask"], 0.0),
                    lambda d: np.where(d["mask"], 0.0, d["x"]), ()),
    "matmul": ("linalg", lambda L: lambda d: d["x"] @ d["w"], lambda d: d["x"] @ d["w"],
               ("0d",)),
}
FAMILIES = sorted({family for family, *_ in CASES.values()})


def cases(size: str, family: str | None = None) -> list[str]:
    return [n for n, (fam, _, _, skip) in CASES.items()
            if size not in skip and (family is None or fam == family)]


def _arrays(size: str) -> dict:
    """Seeded NumPy inputs: x, y of the size (values in [0.5, 1.5), inside every op's domain),
    w for matmul (square over the last dim), a 0-d int64 slice start, an index, a mask."""
    rng = np.random.default_rng(SEED)
    shape = SIZES[size]
    last = shape[-1] if shape else 1
    square = (last, last) if len(shape) > 1 else shape
    return {"x": np.asarray(rng.uniform(0.5, 1.5, shape), np.float32),
            "y": np.asarray(rng.uniform(0.5, 1.5, shape), np.float32),
            "w": np.asarray(rng.uniform(0.5, 1.5, square), np.float32),
            "s": np.array(2, dtype=np.int64), "idx": np.array([0, 2, 3, 1], dtype=np.int64),
            "mask": np.asarray(rng.random(shape) < 0.5)}


def _library(lib: str):
    if lib == "torch":
        import torch

        return torch
    import minitorch

    return minitorch


def inputs(lib: str, size: str, grad: bool) -> dict:
    """The inputs as the library's tensors; x, y and w require grad when `grad`."""
    arrays = _arrays(size)
    if lib == "numpy":
        return arrays
    L = _library(lib)
    out = {}
    for k, a in arrays.items():
        t = L.from_numpy(a.copy()) if lib == "torch" else L.tensor(a)
        if grad and k in ("x", "y", "w"):
            t.requires_grad_(True)
        out[k] = t
    return out


def make_call(lib: str, name: str, size: str, mode: str):
    """A zero-argument callable: one call of op `name` (and its backward, seeded with ones)."""
    _, call, np_call, skip = CASES[name]
    if size in skip:
        raise NotImplementedError(f"{name} does not apply at size {size}")
    if lib == "numpy":
        if np_call is None or mode != "forward":
            raise NotImplementedError(f"no single NumPy call for {name} {mode}")
        d = inputs("numpy", size, False)
        return lambda: np_call(d)
    L = _library(lib)
    d = inputs(lib, size, mode == "forward_backward")
    f = call(L)
    if mode == "forward":
        return lambda: f(d)
    out = f(d)
    seed = L.ones(tuple(out.shape), dtype=out.dtype)

    def forward_backward():
        f(d).backward(seed)

    return forward_backward


def make_round(lib: str, size: str, mode: str, family: str | None = None):
    """A harness step (measure.Job factory): every op of the size (or of one family) called
    REPS[size] times in a row; returns {op: microseconds per call} for this step."""
    if lib == "torch":
        import torch

        torch.set_num_threads(1)  # per-op overhead is single-threaded work
    calls = {}
    for name in cases(size, family):
        try:
            calls[name] = make_call(lib, name, size, mode)
        except NotImplementedError:
            continue
    reps = REPS[size]

    def step():
        out = {}
        for name, fn in calls.items():
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            out[name] = (time.perf_counter() - t0) / reps * 1e6
        return out

    return step


def measure_dispatch(sizes=tuple(SIZES), modes=MODES, rounds: int = 8,
                     target_s: float = 0.2, log=None) -> dict:
    """The harness over every (size, mode): per op, each library's median µs per call and the
    minitorch/torch and minitorch/numpy ratios (median of per-round ratios, 95 % CI,
    reliability by the harness's rule over the rounds where both samples were kept)."""
    from . import measure as M

    rows, info = [], {}
    for size in sizes:
        for mode in modes:
            libs = [lib for lib in LIBS if lib != "numpy" or mode == "forward"]
            jobs = [M.Job(lib, "benchmarks.bench_dispatch:make_round", [lib, size, mode],
                          torch=lib == "torch") for lib in libs]
            out = M.measure(jobs, rounds=rounds, baseline="minitorch", target_s=target_s,
                            info=not info)
            info = info or out["info"]
            rows += per_op_rows(out, size, mode)
            if log:
                log(size, mode, out)
    return {"info": info, "rows": rows}


def per_op_rows(out: dict, size: str, mode: str) -> list[dict]:
    """Per-op rows from one harness run whose steps returned {op: µs} (each sample's last step).
    As the harness does, kept samples are used when there are enough of them, else all samples
    (the row is then flagged not reliable)."""
    times = out["times"]
    kept = {lib: [ms is not None for ms in t["samples_ms"]] for lib, t in times.items()}
    results = {lib: t["results"] for lib, t in times.items()}
    rows = []
    for name in cases(size):
        row = {"op": name, "family": CASES[name][0], "size": size, "mode": mode}
        mt = [r.get(name) for r in results["minitorch"]]
        row["minitorch_us"] = _median(mt, kept["minitorch"])
        for peer in ("torch", "numpy"):
            if peer not in results or name not in (results[peer][0] or {}):
                continue
            other = [r.get(name) for r in results[peer]]
            row[f"{peer}_us"] = _median(other, kept[peer])
            both = [k1 and k2 for k1, k2 in zip(kept["minitorch"], kept[peer], strict=True)]
            pairs = list(zip(mt, other, both, strict=True))
            n_kept = sum(both)
            if not _enough(n_kept, len(both)):
                pairs = [(a, b, True) for a, b, _ in pairs]
            ratios = [a / b for a, b, k in pairs if k and b]
            est = stats.median_ci(ratios) if ratios else stats.Estimate(float("nan"), None,
                                                                        None, 0)
            rel = stats.reliability(est, n_kept, len(both), out["load"], out["max_ci"])
            row[f"ratio_vs_{peer}"] = est.median
            row[f"ratio_vs_{peer}_ci"] = [est.lo, est.hi]
            row[f"reliable_vs_{peer}"] = bool(rel["reliable"])
        row["outside_load"] = out["load"]
        rows.append(row)
    return rows


def _enough(kept: int, total: int) -> bool:
    return kept >= max(stats.MIN_N, math.ceil(stats.MIN_KEPT * total))


def _median(xs, kept) -> float | None:
    """The median over kept samples if there are enough, else over all of them."""
    use = kept if _enough(sum(kept), len(kept)) else [True] * len(kept)
    vals = sorted(x for x, k in zip(xs, use, strict=True) if k and x is not None)
    if not vals:
        return None
    m = len(vals) // 2
    return vals[m] if len(vals) % 2 else (vals[m - 1] + vals[m]) / 2


class Dispatch:
    """minitorch alone, timed by asv: one call of every op of a family at a size."""

    params = (FAMILIES, list(SIZES))
    param_names = ["family", "size"]
    timeout = 120

    def setup(self, family, size):
        self.calls = {m: [make_call("minitorch", n, size, m) for n in cases(size, family)]
                      for m in MODES}
        if not self.calls["forward"]:
            raise NotImplementedError(f"no {family} op applies at size {size}")

    def time_dispatch_forward(self, family, size):
        for fn in self.calls["forward"]:
            fn()

    def time_dispatch_forward_backward(self, family, size):
        for fn in self.calls["forward_backward"]:
            fn()


class DispatchRatio:
    """minitorch/torch per family (the sum of its ops' per-call times),
    from one harness run over every size and mode; nan when not measured reliably."""

    params = (FAMILIES, list(SIZES), list(MODES))
    param_names = ["family", "size", "mode"]
    timeout = 900
    rounds = int(os.environ.get("MINITORCH_BENCH_ROUNDS", "8"))  # the smoke run sets 2

    def setup_cache(self):
        return measure_dispatch(rounds=self.rounds, target_s=0.1 if self.rounds < 6 else 0.2)

    setup_cache.timeout = 1800

    def _ratio(self, cache, family, size, mode, peer):
        rows = [r for r in cache["rows"] if (r["family"], r["size"], r["mode"]) == (family, size,
                                                                                      mode)]
        if not rows or any(f"ratio_vs_{peer}" not in r for r in rows):
            return float("nan")  # no NumPy call for some op, or nothing at this size
        if not all(r[f"reliable_vs_{peer}"] for r in rows):
            return float("nan")
        mt = sum(r["minitorch_us"] for r in rows)
        return mt / sum(r[f"{peer}_us"] for r in rows)

    def track_dispatch_ratio_vs_torch(self, cache, family, size, mode):
        return self._ratio(cache, family, size, mode, "torch")

    track_dispatch_ratio_vs_torch.unit = "minitorch/torch"



def format_rows(rows: list[dict]) -> str:
    """The per-op table: µs per call, minitorch/torch [95 % CI] (or why no verdict), NumPy."""
    def num(x, spec=".1f"):
        return format(x, spec) if isinstance(x, (int, float)) else "n/a"

    lines = [f"{'op':<16} {'size':<10} {'mode':<17} {'minitorch':>9} {'torch':>8} "
             f"{'mt/torch [95% CI]':>22} {'numpy':>7} {'mt/numpy':>8}"]
    for r in rows:
        lo, hi = r.get("ratio_vs_torch_ci") or (None, None)
        ratio = (f"{num(r.get('ratio_vs_torch'), '.2f')} [{num(lo, '.2f')},{num(hi, '.2f')}]"
                 + ("" if r.get("reliable_vs_torch") else "*"))
        lines.append(f"{r['op']:<16} {r['size']:<10} {r['mode']:<17} "
                     f"{num(r.get('minitorch_us')):>9} {num(r.get('torch_us')):>8} {ratio:>22} "
                     f"{num(r.get('numpy_us'), '.2f'):>7} {num(r.get('ratio_vs_numpy')):>8}")
    lines.append("µs per call, medians over kept rounds; * = not measured reliably (outside "
                 "load or a wide interval): no verdict")
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="per-op dispatch: minitorch vs torch vs NumPy")
    ap.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--write", action="store_true",
                    help="store the rows in reports/artifacts/bench.json (key dispatch)")
    args = ap.parse_args(argv)
    out = measure_dispatch(args.sizes, args.modes, rounds=args.rounds)
    print(format_rows(out["rows"]))
    if args.write:
        from artifacts import read_json, write_json

        bench = read_json("bench.json") or {}
        bench["dispatch"] = out
        print("wrote", write_json("bench.json", bench))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
