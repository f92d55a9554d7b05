"""Distributed: data-parallel step time at 1 and 2 ranks, scaling efficiency, the measured
allreduce, and the ring-allreduce cost model (at which rank count and bandwidth communication
would dominate), from mpi.json (written by benchmarks/mpi_scaling.py). Reads JSON only.

The section appears when mpi.json exists (`sections`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import parts as P

ARTIFACT = "mpi.json"


def sections(inputs: Any, safe: Callable[[str, str, Callable[[], dict]], dict]) -> dict:
    """{"distributed": the section} if the artifact exists, else {}."""
    if not (inputs.artifacts / ARTIFACT).exists():
        return {}
    return {"distributed": safe("distributed", "Distributed training", lambda: build(inputs))}


def _ms(v: Any) -> str:
    f = P.as_float(v)
    return "" if f is None else f"{f:.2f}" if f < 10 else f"{f:.1f}"


def _ratio(v: Any) -> str:
    f = P.as_float(v)
    return "" if f is None else f"{f:.2f}"


def build(inputs: Any) -> dict:
    title = "Distributed training"
    payload = inputs.json(ARTIFACT)
    rows = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(rows, list) or not rows:
        part = P.missing(title, "No mpi.json results: run `python -m benchmarks.mpi_scaling`.")
        return {"id": "distributed", "title": title, "summary": {}, "parts": [part]}
    machine = payload.get("machine") or {}
    loads = [x for x in payload.get("outside_load_cores") or [] if P.is_number(x)]
    load = f"; outside load {min(loads):.1f}-{max(loads):.1f} cores" if loads else ""
    where = (f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} cores{load}; global batch "
             f"{payload.get('global_batch')} x {payload.get('block_size')}, 1 BLAS thread per "
             f"rank, median of {payload.get('steps')} steps x {payload.get('rounds')} rounds")
    speed, model = [], []
    for r in rows:
        if not isinstance(r, dict):
            continue
        step = r.get("step_ms") or {}
        eff = P.as_float(r.get("efficiency_2"))
        speed.append([r.get("preset"), r.get("dtype"), P.cell(r.get("params"), "num"),
                      _ms(step.get("1")), _ms(step.get("2")), _ratio(r.get("speedup_2")),
                      P.cell(_ratio(eff), "pass" if eff and eff >= 0.7 else ""),
                      _ms(r.get("lone_allreduce_ms_2")),
                      _ratio(r.get("effective_bandwidth_gbit")),
                      _ms(r.get("model_step_ms_2")), _ratio(r.get("measured_over_model_2"))])
        cm = r.get("cost_model") or {}
        model.append([r.get("preset"), r.get("dtype"),
                      f"{(P.as_float(r.get('param_bytes')) or 0) / 2**20:.2f}", _ms(step.get("1")),
                      *[_from(cm.get(f"{g}Gbit")) for g in payload.get("bandwidths_gbit", [])]])
    first = rows[0] if isinstance(rows[0], dict) else {}
    cards = P.cards([
        P.card(f"2-rank efficiency ({first.get('preset')}, {first.get('dtype')})",
               _ratio(first.get("efficiency_2")), sub="t1 / (2 t2); 1.00 is perfect"),
        P.card("measured / model, 2 ranks", _ratio(first.get("measured_over_model_2")),
               sub="model: t1/2 + measured allreduce"),
    ])
    busy = payload.get("reliable") is False
    warn = [P.error("Measured on a busy machine", f"Other processes used up to "
                    f"{max(loads):.1f} cores while this ran ({where.split(';')[0]}): the step "
                    "times measure contention for cores, not the cost of data parallelism. "
                    "Rerun `python -m benchmarks.mpi_scaling` on a quiet machine.")] \
        if busy and loads else []
    parts = [*warn, cards,
             P.table("Step time at 1 and 2 ranks", [
                 "preset", "dtype", "params", "1 rank ms", "2 ranks ms", "speedup",
                 "efficiency", "allreduce ms", "Gb/s", "model ms", "measured / model"],
                 speed, note=f"{where}. allreduce: an in-place allreduce of the gradient bytes "
                 "alone on this machine (shared memory; fastest of the repeats); Gb/s: "
                 "parameter bytes x 8 over that time; model: t1/2 + that allreduce. Both ranks "
                 "share this machine's cores with any other load, so the 2-rank compute is "
                 "not t1/2 when cores are busy."),
             P.table("Cost model: where communication would dominate", [
                 "preset", "dtype", "param MB", "t1 ms",
                 *[f"N at {g} Gb/s" for g in payload.get("bandwidths_gbit", [])]],
                 model, note="A ring allreduce moves 2(N-1)/N x P bytes per rank per step; "
                 "compute per rank is t1/N at a fixed global batch. Communication outlasts "
                 "compute from the smallest N with 2(N-1) x 8P / b > t1, i.e. N > 1 + t1 b / "
                 "(16 P). At a global batch of 32 no more than 32 ranks can share it, so an N "
                 "above 32 means: not within this batch.")]
    return {"id": "distributed", "title": title,
            "summary": {"efficiency_2": first.get("efficiency_2")}, "parts": parts}


def _from(entry: Any) -> str:
    n = entry.get("comm_dominates_from_ranks") if isinstance(entry, dict) else None
    return "> 1024" if n is None else str(n)
