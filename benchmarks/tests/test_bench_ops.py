"""asv's per-op benchmarks take their parameters from the registry: every registered op and
composite must get inputs that run forward and backward, or its benchmark fails in asv only
(the main job's short asv run), long after the op landed."""

from __future__ import annotations

import pytest

from benchmarks import bench_ops


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_op_and_composite_gets_benchmark_inputs(dtype):
    assert bench_ops.unbuildable(dtype) == {}, "add a maker to INPUTS in benchmarks/bench_ops.py"
