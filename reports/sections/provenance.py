"""Provenance: which code, on which machine and libraries, with which seeds, produced the page.

Gathered when the report is built (git, versions, BLAS, CPU, date), plus what the artifacts say
about themselves (versions and seeds written by the suites and the main job).
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
from importlib import metadata
from typing import Any

from artifacts import ROOT

from .. import parts as P
from ..inputs import Inputs
from . import fuzz, mutation

_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
# Artifacts of the long runs `make report` leaves out: on a fresh clone they are not there, and
# the inputs table says which command adds each (their sections say the same).
NOT_IN_MAIN_JOB = {
    "fuzz.json": f"run {fuzz.COMMAND} to add the 100,000-program run",
    "mutation.json": f"run {mutation.FULL} to add the full mutation run (the main job runs a "
                     "sample: mutation-sample.json)",
    "mutation_engine.json": f"run `{mutation.ENGINE}` (about 15 minutes) to add the engine's "
                            "mutation run",
}


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def blas() -> str:
    """numpy's BLAS as numpy itself reports it (name, version, OpenBLAS build config)."""
    try:
        import numpy as np

        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception as e:  # noqa: BLE001 - the page says what could not be read
        return f"unknown ({type(e).__name__})"
    text = f"{info.get('name', '?')} {info.get('version', '')}".strip()
    config = info.get("openblas configuration")
    return f"{text} ({config.strip()})" if config else text


def cpu() -> str:
    model = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor() or "unknown"
    return f"{model}, {os.cpu_count()} logical CPUs, {platform.machine()}"


def _threads(job: Any) -> str:
    """BLAS thread settings: the main job's (which ran the suites), else this process's."""
    env = job.get("env") if isinstance(job, dict) and isinstance(job.get("env"), dict) else None
    source = env if env is not None else os.environ
    text = ", ".join(f"{v}={source.get(v, 'unset')}" for v in _THREAD_VARS)
    return f"{text} ({'main job' if env is not None else 'report build'})"


def collect(inputs: Inputs) -> dict[str, Any]:
    """The facts shown in the page header and the provenance section."""
    commit = _git("rev-parse", "HEAD")
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    job = inputs.json("main_job.json")
    seeds = _seeds(inputs, job)
    return {
        "commit": commit or "unknown (not a git checkout)",
        "short": commit[:10] if commit else "unknown",
        "dirty": None if dirty is None else bool(dirty),
        "branch": _git("rev-parse", "--abbrev-ref", "HEAD") or "unknown",
        "commit_date": _git("log", "-1", "--format=%cI") or "unknown",
        "python": sys.version.split()[0],
        "numpy": _version("numpy"),
        "torch": _version("torch"),
        "minitorch": _version("minitorch"),
        "blas": blas(),
        "blas_short": blas().split(" (")[0],
        "threads": _threads(job),
        "cpu": cpu(),
        "os": platform.platform(),
        "seeds": seeds,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "job_date": P.lookup(job, "finished", "date", default=None) if job else None,
        "job": job,
    }


def _seeds(inputs: Inputs, job: Any) -> str:
    found: dict[str, str] = {}
    sources: list[tuple[str, Any]] = [("main job", job)]
    for run in inputs.run_dirs:
        sources.append((f"run {run.name}", inputs.json_file(run / "config.json",
                                                           f"runs/{run.name}/config.json")))
    for label, payload in sources:
        for path, value in P.scalars(payload) if payload is not None else []:
            if "seed" in path.rsplit(".", 1)[-1].lower():
                found[f"{label}: {path}"] = str(value)
    found.setdefault("verification and memory suites", "0 (autouse fixture: numpy and minitorch)")
    return "; ".join(f"{k} = {v}" for k, v in found.items())


def build(prov: dict[str, Any], inputs: Inputs) -> dict:
    dirty = {None: "unknown", True: "yes: uncommitted changes to tracked files",
             False: "no"}[prov["dirty"]]
    items = [("git commit", prov["commit"]), ("branch", prov["branch"]),
             ("commit date", prov["commit_date"]), ("dirty", dirty),
             ("report built", prov["date"]), ("main job finished", prov["job_date"] or "—"),
             ("Python", prov["python"]), ("numpy", prov["numpy"]), ("torch", prov["torch"]),
             ("minitorch", prov["minitorch"]), ("BLAS", prov["blas"]),
             ("BLAS threads", prov["threads"]), ("CPU", prov["cpu"]), ("OS", prov["os"]),
             ("seeds", prov["seeds"])]
    out = [P.kv("Environment of this report", items,
                note="Collected when the page was built; the artifacts' own metadata is below.")]
    meta = []
    for name in sorted(p.name for p in inputs.artifacts.glob("*.json")):
        payload = inputs.json(name)
        if isinstance(payload, dict):
            for k in ("python", "numpy", "torch", "commit", "git", "machine", "date", "seed",
                      "threads", "blas"):
                if k in payload and P._is_scalar(payload[k]):
                    meta.append([name, k, payload[k]])
    rows = []
    cls = {"found": "pass", "missing": "warn", "older than the main job": "warn",
           "not run yet": "none"}
    for label, (status, detail) in sorted(inputs.seen.items()):
        if status == "missing" and label in NOT_IN_MAIN_JOB:  # nothing failed: a longer run
            status, detail = "not run yet", NOT_IN_MAIN_JOB[label]
        rows.append([label, P.cell(status, cls.get(status, "fail")), detail])
    out.append(P.table("Inputs read by this report", ["input", "status", "where / when"], rows))
    if meta:
        out.append(P.table("What the artifacts say about themselves", ["artifact", "field",
                                                                       "value"], meta))
    return {"id": "provenance", "title": "Provenance", "parts": out, "summary": {}}
