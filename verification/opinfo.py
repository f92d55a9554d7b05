"""PyTorch's own OpInfo database (torch.testing._internal.common_methods_invocations.op_db) as
a peer suite: each sample of every mapped OpInfo (opinfo_table.MAPPED) runs in torch and in
minitorch, CPU, float64/float32/int64/bool where the OpInfo lists them; forward values are held to
torch.testing's default tolerances (what OpInfo's reference tests use) and, for floating outputs,
the gradient of sum(out * cotangent) w.r.t. every floating input to the same. Never imported by
minitorch. CLI (`make opinfo`): python -m verification.opinfo [--max-samples N] [--only NAME...]
"""

from __future__ import annotations

import argparse
import functools
import time
import warnings
from collections import Counter
from collections.abc import Iterable

import numpy as np
import torch

import minitorch as mt
from minitorch.nn import functional as mtF
from verification.opinfo_table import MAPPED, NOT_IN_API, RANDOM

DTYPES = {"float64": torch.float64, "float32": torch.float32, "int64": torch.int64,
          "bool": torch.bool}
TOL = {"float64": (1e-7, 1e-7), "float32": (1.3e-6, 1e-5)}  # torch.testing's (rtol, atol)

# Deliberate differences: OpInfo full name (or "name:dtype") -> reason. Its samples count as
# xfailed; test_opinfo.py makes each a strict xfail, so a difference that goes away fails there.
XFAIL: dict[str, str] = {
    "sort:bool": "ties: the order of equal elements' indices is unspecified (not stable)",
    "argsort:bool": "ties: the order of equal elements' indices is unspecified",
    "topk:int64": "ties: which of equal elements' indices topk returns is unspecified",
    "pow:float32": "the exponent's gradient summed over a broadcast dim cancels (terms ~4e8 to "
                   "a sum ~1e3): NumPy's float32 pow/log and torch's differ by an ulp in 1 of 5 "
                   "elements, which that magnifies past rtol; both are as far (46) from the "
                   "float64 gradient",
}

# Deliberate differences of some samples only: OpInfo full name -> (which samples, reason). Each
# such sample must still differ (a strict xfail of that sample: one that passes is a failure);
# the others must pass.
SAMPLE_XFAIL: dict[str, tuple[object, str]] = {
    "nn.functional.scaled_dot_product_attention": (
        lambda s: s.kwargs.get("dropout_p", 0.0) > 0,
        "dropout_p > 0: the dropout mask is drawn from minitorch's generator, so the values "
        "cannot equal torch's (test_sdpa_dropout.py checks the keep rate, scale and gradient)"),
}


class Unsupported(Exception):
    """A sample minitorch cannot run by design (a dtype it lacks, a complex or sparse value)."""


def tolerances(opinfo) -> dict[str, tuple[float, float]]:
    """TOL, with the OpInfo's own override for all of TestCommon (its reference tests) where it
    declares one (a DecorateInfo of toleranceOverride with no test name): never looser else."""
    from torch.testing._internal.common_device_type import toleranceOverride

    out = dict(TOL)
    for info in getattr(opinfo, "decorators", ()):
        if getattr(info, "cls_name", None) != "TestCommon" or info.test_name is not None:
            continue
        for d in info.decorators:
            if isinstance(d, toleranceOverride):
                for dt, t in d.d.items():
                    name = str(dt).removeprefix("torch.")
                    if name in out and (info.dtypes is None or dt in info.dtypes):
                        out[name] = (t.rtol, t.atol)
    return out


@functools.cache
def db() -> dict[str, object]:
    from torch.testing._internal.common_methods_invocations import op_db

    return {o.name + ("." + o.variant_test_name if o.variant_test_name else ""): o for o in op_db}


# ---- torch values -> minitorch values --------------------------------------------------------
_MT_DTYPES = {torch.float64: mt.float64, torch.float32: mt.float32, torch.int64: mt.int64,
              torch.bool: mt.bool}


def to_mt(x, leaves: list):
    """x with torch tensors and dtypes replaced by minitorch's; tensors that require grad are
    appended to `leaves` as (torch tensor, minitorch tensor)."""
    if isinstance(x, torch.Tensor):
        if x.dtype not in _MT_DTYPES or x.is_sparse or x.is_complex():
            raise Unsupported(f"a {x.dtype}{' sparse' if x.is_sparse else ''} tensor")
        t = mt.tensor(x.detach().numpy().copy(), requires_grad=x.requires_grad)
        if x.requires_grad:
            leaves.append((x, t))
        return t
    if isinstance(x, torch.dtype):
        if x not in _MT_DTYPES:
            raise Unsupported(f"dtype {x}")
        return _MT_DTYPES[x]
    if isinstance(x, torch.device):
        return str(x)
    if isinstance(x, (list, tuple)):
        return type(x)(to_mt(v, leaves) for v in x)
    if isinstance(x, dict):
        return {k: to_mt(v, leaves) for k, v in x.items()}
    if isinstance(x, torch.memory_format) or isinstance(x, torch.layout):
        raise Unsupported(f"{x}")
    return x


def _flat(out) -> list:
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _flat(o)]
    return [out]


def _array(v) -> np.ndarray:
    if isinstance(v, torch.Tensor):
        return v.detach().numpy()
    if isinstance(v, mt.Tensor):
        return np.asarray(v.data)
    return np.asarray(v)


def call_mt(kind: str, name: str, args: list, kwargs: dict):
    if kind == "torch":
        return getattr(mt, name)(*args, **kwargs)
    if kind == "F":
        return getattr(mtF, name)(*args, **kwargs)
    if kind == "attr":
        return getattr(args[0], name)
    if kind in ("swapped", "F.swapped"):  # the OpInfo's op(b, a): einsum's (operands, eq),
        module = mt if kind == "swapped" else mtF  # embedding's (weight, idx)
        return getattr(module, name)(args[1], args[0], *args[2:], **kwargs)
    if name.endswith("_"):  # in place: on a copy, as the OpInfo's op does (a leaf may not)
        args = [args[0].clone(), *args[1:]]
    return getattr(args[0], name)(*args[1:], **kwargs)


# ---- one sample ------------------------------------------------------------------------------
def run_sample(opinfo, full: str, sample, dtype: str, seed: int) -> tuple[str, str]:
    """('pass' | 'fail' | 'unsupported', detail) for one SampleInput."""
    kind, name = MAPPED[full]
    targs = [sample.input, *sample.args]
    leaves: list = []
    try:
        margs, mkw = to_mt(targs, leaves), to_mt(dict(sample.kwargs), leaves)
    except Unsupported as e:
        return "unsupported", str(e)
    try:
        t_out = opinfo.op(*targs, **sample.kwargs)
    except Exception as e:  # noqa: BLE001  (torch refusing a sample: nothing to compare)
        return "unsupported", f"torch raised {type(e).__name__}"
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            m_out = call_mt(kind, name, margs, mkw)
    except TypeError as e:
        if "does not compute in" in str(e) or "no int32 dtype" in str(e):
            return "unsupported", str(e)
        return "fail", f"minitorch raised TypeError: {e}"[:300]
    except Exception as e:  # noqa: BLE001
        return "fail", f"minitorch raised {type(e).__name__}: {e}"[:300]
    t_flat, m_flat = _flat(t_out), _flat(m_out)
    tol = tolerances(opinfo)
    if len(t_flat) != len(m_flat):
        return "fail", f"{len(m_flat)} outputs, torch {len(t_flat)}"
    for i, (t, m) in enumerate(zip(t_flat, m_flat)):
        a, b = _array(m), _array(t)
        rtol, atol = tol.get(str(b.dtype), (0.0, 0.0))  # the output's dtype: exp(int64) is float
        if a.shape != b.shape:
            return "fail", f"output {i}: shape {a.shape}, torch {b.shape}"
        if isinstance(t, torch.Tensor) and str(a.dtype) != str(t.dtype).removeprefix("torch."):
            return "fail", f"output {i}: dtype {a.dtype}, torch {t.dtype}"
        if full in RANDOM:
            continue
        if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            return "fail", f"output {i}: values differ"
    if not leaves or full in RANDOM:
        return "pass", ""
    return _grads(t_flat, m_flat, leaves, *tol[dtype], seed)


def _grads(t_flat, m_flat, leaves, rtol, atol, seed) -> tuple[str, str]:
    rng = np.random.default_rng(seed)
    pairs = [(t, m) for t, m in zip(t_flat, m_flat)
             if isinstance(t, torch.Tensor) and t.requires_grad and t.dtype.is_floating_point]
    if not pairs:
        return "pass", ""
    cots = [rng.standard_normal(t.shape) for t, _ in pairs]
    t_loss = sum((t * torch.tensor(c, dtype=t.dtype)).sum() for (t, _), c in zip(pairs, cots))
    t_in = [t for t, _ in leaves]
    t_g = torch.autograd.grad(t_loss, t_in, allow_unused=True)
    m_loss = None
    for (_, m), c in zip(pairs, cots):
        if not m.requires_grad:
            return "fail", "output does not require grad (torch's does)"
        term = (m * mt.tensor(c, dtype=m.dtype)).sum()
        m_loss = term if m_loss is None else m_loss + term
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            m_loss.backward()
    except Exception as e:  # noqa: BLE001
        return "fail", f"backward raised {type(e).__name__}: {e}"[:300]
    for i, ((_, m), g) in enumerate(zip(leaves, t_g)):
        want = np.zeros(m.shape) if g is None else g.numpy()
        got = np.zeros(m.shape) if m.grad is None else np.asarray(m.grad.data)
        if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol,
                                                      equal_nan=True):
            return "fail", f"gradient of input {i} differs"
    return "pass", ""


# ---- one OpInfo ------------------------------------------------------------------------------
def run_opinfo(opinfo, full: str, max_samples: int | None = None) -> dict:
    """Per dtype: counts by status, and the first failures' details."""
    counts: dict[str, Counter] = {}
    failures: list[str] = []
    supported = opinfo.supported_dtypes("cpu")
    xfail = XFAIL.get(full)
    for dname, dt in DTYPES.items():
        if dt not in supported:
            continue
        c = counts.setdefault(dname, Counter())
        grad = dt.is_floating_point and opinfo.supports_autograd
        torch.manual_seed(0)
        try:
            samples = list(opinfo.sample_inputs("cpu", dt, requires_grad=grad))
        except Exception as e:  # noqa: BLE001
            c["unsupported"] += 1
            failures.append(f"{dname}: sample_inputs raised {type(e).__name__}")
            continue
        for k, s in enumerate(samples[:max_samples]):
            status, detail = run_sample(opinfo, full, s, dname, k)
            if status == "fail" and (xfail or XFAIL.get(f"{full}:{dname}")):
                status = "xfail"
            elif full in SAMPLE_XFAIL and SAMPLE_XFAIL[full][0](s):
                status, detail = {"fail": ("xfail", detail), "pass": (
                    "fail", "a listed difference (SAMPLE_XFAIL) passed")}.get(status,
                                                                           (status, detail))
            c[status] += 1
            if status == "fail" and len(failures) < 5:
                failures.append(f"{dname} #{k}: {detail}")
    return {"target": ".".join(MAPPED[full]), "counts": {d: dict(c) for d, c in counts.items()},
            "failures": failures, "xfail": xfail or SAMPLE_XFAIL.get(full, (None, None))[1]}


def run(names: Iterable[str], max_samples: int | None = None) -> dict:
    ops = db()
    table = {n: run_opinfo(ops[n], n, max_samples) for n in names}
    totals: dict[str, Counter] = {}
    for row in table.values():
        for d, c in row["counts"].items():
            totals.setdefault(d, Counter()).update(c)
    return {"ops": table, "totals": {d: dict(c) for d, c in totals.items()},
            "mapped": len(MAPPED), "database": len(ops),
            "not_in_api": dict(sorted(Counter(NOT_IN_API.values()).items())),
            "xfail": {**XFAIL, **{k: f"{r} (those samples only)" for k, (_, r) in
                                  SAMPLE_XFAIL.items()}}, "max_samples": max_samples}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-samples", type=int, default=None)
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    out = run(args.only or sorted(MAPPED), args.max_samples)
    out["seconds"] = round(time.perf_counter() - start, 1)
    out["complete"] = not args.only and args.max_samples is None
    from artifacts import write_json

    print("wrote", write_json("opinfo.json", out))
    bad = {n: r for n, r in out["ops"].items()
           if any(c.get("fail") for c in r["counts"].values())}
    for n, r in sorted(bad.items()):
        print(f"  {n}: {r['failures'][:2]}")
    print(f"{len(out['ops'])} OpInfos, totals {out['totals']}, {len(bad)} with failures, "
          f"{out['seconds']} s")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
