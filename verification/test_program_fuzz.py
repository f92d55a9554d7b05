"""The fixed-seed profile of the program fuzzer (verification/program_fuzz.py): random programs
run in minitorch and in torch must agree on every value, shape, dtype, requires_grad and leaf
gradient. Also its negative control: the same fuzzer run against a copy of minitorch with a
planted engine bug must fail and print a reproducer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from verification import program_fuzz as pf

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

N_PROGRAMS = 2000  # the default test command's share; `make fuzz` runs 100,000
SEED = 0
ROOT = Path(__file__).resolve().parents[1]

# Every motif the generator knows must show up in the fixed-seed run (a generator that silently
# stopped emitting one would otherwise keep the suite green). No family is optional: one whose
# op regresses shows up as a disagreement with torch, never as a family left out.
REQUIRED = ["fanout:0d", "fanout:empty", "fanout:dense", "diamond", "binary:+:bcast",
            "reduce:sum:0d", "reduce:sum:empty", "softmax:empty", "log_softmax:dense",
            "view:reshape", "view:transpose", "view:permute", "view:index", "view:advanced",
            "matmul:k0", "matmul:2d+", "join:cat", "join:stack", "select:where", "nn:linear",
            "nn:layer_norm", "nn:rms_norm", "nn:cross_entropy:2d", "nn:embedding", "nn:sdpa",
            "cast:float64", "detach", "detach:leaf", "backward:single", "backward:retain_twice",
            "backward:accumulate", "backward:explicit", "backward:zero",
            "backward:freed", "matmul:1d", "view:expand", "view:clone", "pow_tensor:pos",
            "unary:gelu_none", "nn:cross_entropy:3d", "nn:cross_entropy:2d:probs", "reduce:var",
            "nn:cross_entropy:3d:ignore_index", "nn:cross_entropy:2d:reduction",
            "nn:cross_entropy:2d:label_smoothing", "nn:sdpa:Tq=Tk:attn_mask"]


def test_program_fuzz_matches_torch(record):
    stats = pf.fuzz(N_PROGRAMS, seed0=SEED, chunk=N_PROGRAMS, log=lambda *a: None)
    record("program_fuzz", "engine", f"{stats.programs} programs, seed {SEED}", None, None,
           {"float64": pf.RTOL64, "float32": pf.RTOL32}, not stats.failures,
           error_over_tol=stats.max_ratio,
           failures=sorted(stats.failures), families=dict(stats.families),
           deliberate=dict(stats.deliberate))
    if stats.failures:
        pytest.fail(f"{len(stats.failures)} distinct disagreements with torch:\n\n"
                    + "\n\n".join(f"[{sig}: {f['count']} programs]\n{f['reproducer']}"
                                    for sig, f in sorted(stats.failures.items())),
                    pytrace=False)
    assert stats.programs >= N_PROGRAMS
    missing = [t for t in REQUIRED
               if not any(k == t or k.startswith(t + ":") for k in stats.families)]
    assert not missing, f"the generator never produced {missing}"


PLANTED = [  # (pattern in minitorch/engine/graph.py, replacement): drop earlier contributions
    ("    pending[key] = prev\n", "    pending[key] = grad\n"),
]


def test_program_fuzz_catches_planted_accumulation_bug(tmp_path):
    """Copy minitorch, make the pending-gradient sum keep only the newest contribution, and run
    the fuzzer on the copy: it must report a failure with a reproducer."""
    copy = tmp_path / "minitorch"
    shutil.copytree(ROOT / "minitorch", copy, ignore=shutil.ignore_patterns("__pycache__"))
    graph = copy / "engine" / "graph.py"
    text = graph.read_text()
    hit = next(((a, b) for a, b in PLANTED if a in text), None)
    assert hit, f"no planted-bug pattern found in graph.py; update PLANTED ({PLANTED})"
    graph.write_text(text.replace(*hit))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    proc = subprocess.run(
        [sys.executable, "-m", "verification.program_fuzz", "--programs", "300", "--chunk", "300",
         "--max-failures", "1", "--no-shrink", "--only", "value", "--no-json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert str(copy) in out, f"the fuzzer did not run on the planted copy:\n{out[-2000:]}"
    assert proc.returncode == 1, f"the planted bug was not caught:\n{out[-3000:]}"
    # a wrong gradient value (not some other disagreement the engine may have today)
    assert "NEW FAILURE value @ backward" in out and "# ---- torch" in out, out[-3000:]
