"""The documented flamegraph command works, writes one self-contained HTML file, and memray's
peak for the step agrees with tracemalloc's (two independent tools, one number)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from .measure import CHILD_ENV, ROOT
from .test_mem_traced import WARMUP

MB = 2**20
EXTERNAL = re.compile(r"<(script|link)\b[^>]*\b(src|href)\s*=\s*[\"']?(https?:)?//", re.I)


@pytest.mark.slow
@pytest.mark.memory_runs("traced")
def test_mem_flamegraph_one_step(tmp_path, run, results):
    out = tmp_path / "memray-step.html"
    proc = subprocess.run([sys.executable, "-m", "memory.flamegraph", "--out", str(out)],
                          cwd=ROOT, env={**os.environ, **CHILD_ENV},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    html = out.read_text(errors="replace")
    assert len(html) > 100_000 and "memray" in html.lower()
    assert not EXTERNAL.search(html), f"loads an external asset: {EXTERNAL.search(html)[0]}"

    traced = run("traced")  # same workload: the step's rise above the heap it started from
    k = WARMUP
    rise = (traced["traced_peak_bytes"][k] - traced["traced_heap_bytes"][k - 1]) / MB
    results["flamegraph"] = {"command": "python -m memory.flamegraph --out "
                                        "reports/out/memray-step.html",
                             "memray_step_peak_mb": info["peak_memory_mb"],
                             "tracemalloc_step_rise_mb": rise, "html_bytes": len(html)}
    assert abs(info["peak_memory_mb"] - rise) <= 0.05 * rise, (
        f"memray sees {info['peak_memory_mb']:.1f} MB for the step, tracemalloc {rise:.1f} MB")
