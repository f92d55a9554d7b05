"""The data-parallel cost model: communication dominates from the smallest N with
2(N-1) x 8P / b > t1, i.e. N > 1 + t1 b / (16 P)."""

from __future__ import annotations

from benchmarks.mpi_scaling import cost_model


def test_cost_model_threshold_matches_closed_form():
    t1, P = 0.040, 647940
    model = cost_model(t1, P)
    assert sorted(model) == ["100Gbit", "10Gbit", "1Gbit"]
    for gbit, entry in model.items():
        b = float(gbit.removesuffix("Gbit")) * 1e9
        n = entry["comm_dominates_from_ranks"]
        bound = 1 + t1 * b / (16 * P)
        assert (n is None and bound >= 1024) or (n is not None and n - 1 <= bound < n)
    assert model["1Gbit"]["comm_dominates_from_ranks"] == 5  # 1 + 0.04e9 / (16 * 647940) = 4.86


def test_cost_model_allreduce_time_at_2_ranks():
    """At N = 2 the ring moves exactly P bytes per rank: 8P / b seconds."""
    assert abs(cost_model(0.04, 10**6)["10Gbit"]["allreduce_s_at_2"] - 8e6 / 1e10) < 1e-15
