"""The benchmark statistics on synthetic series: intervals, reliability, verdicts and change
detection. No real timing is asserted anywhere here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks import stats


def series(median: float, n: int = 12, spread: float = 0.02, seed: int = 0) -> list[float]:
    """n per-sample times around `median` with a ~2 % (relative) log-normal jitter."""
    rng = np.random.default_rng(seed)
    return list(median * np.exp(rng.normal(0, spread, n)))


def test_median_ci_order_statistics_match_the_binomial_table():
    xs = list(range(1, 11))  # n = 10: the 95 % interval is x_(2)..x_(9) (coverage 97.9 %)
    est = stats.median_ci(xs)
    assert (est.median, est.lo, est.hi, est.n) == (5.5, 2, 9, 10)
    assert stats.median_ci(range(6)).lo == 0 and stats.median_ci(range(6)).hi == 5
    few = stats.median_ci([1.0, 2.0, 3.0, 4.0, 5.0])  # n = 5: no 95 % interval exists
    assert few.lo is None and math.isinf(few.half_width)


def test_median_ci_covers_the_true_median_about_95_percent():
    rng = np.random.default_rng(1)
    covered = 0
    for _ in range(400):
        est = stats.median_ci(rng.exponential(1.0, 15))
        covered += est.lo <= math.log(2) <= est.hi
    assert 0.93 <= covered / 400 <= 1.0


def test_quiet_series_is_reliable_and_gets_a_verdict():
    est = stats.median_ci(series(1.2))
    rel = stats.reliability(est, kept=12, total=12, load=0.01)
    assert rel["reliable"] and rel["reason"] == ""
    assert stats.target_verdict(est, 1.3, rel) == "meets"
    assert stats.target_verdict(est, 1.1, rel) == "misses"
    assert stats.target_verdict(est, est.median, rel) == "undecided"  # CI straddles the target


@pytest.mark.parametrize("kept, spread, why", [
    (3, 0.02, "dropped for outside load"),  # most samples dropped
    (12, 0.4, "wider than"),  # a noisy series: interval too wide
])
def test_unreliable_series_gets_no_verdict(kept, spread, why):
    est = stats.median_ci(series(1.2, spread=spread))
    rel = stats.reliability(est, kept=kept, total=12, load=1.7)
    assert not rel["reliable"] and why in rel["reason"]
    assert stats.target_verdict(est, 1.3, rel) is None
    text = stats.unreliable_text(rel)
    assert text.startswith("not measured reliably: load 1.70 cores, CI ±")


def test_benign_change_is_not_flagged():
    base = series(100.0, seed=1)
    for seed, factor in ((2, 1.0), (3, 1.03), (4, 0.97)):  # noise, +3 %, -3 %
        ch = stats.change(base, series(100.0 * factor, seed=seed))
        assert ch["verdict"] == "same", (factor, ch)


def test_planted_20_percent_slowdown_is_flagged():
    base = series(100.0, seed=1)
    ch = stats.change(base, series(120.0, seed=2))
    assert ch["verdict"] == "slower" and ch["p"] < 0.01 and 1.15 < ch["ratio"] < 1.25
    assert stats.change(series(120.0, seed=2), base)["verdict"] == "faster"


def test_significant_but_small_change_is_not_flagged():
    """5 % slower with tight samples: significant, but under the 10 % threshold."""
    ch = stats.change(series(100.0, n=30, spread=0.005, seed=1),
                      series(105.0, n=30, spread=0.005, seed=2))
    assert ch["p"] < 0.001 and ch["verdict"] == "same"


def test_large_but_insignificant_change_is_not_flagged():
    """Two samples a side can never be significant, however far apart."""
    ch = stats.change([100.0, 101.0], [150.0, 151.0])
    assert ch["p"] > 0.05 and ch["verdict"] == "same"


def test_interval_fallback_needs_disjoint_intervals_and_the_threshold():
    assert stats.change_from_intervals((100, 98, 102), (120, 117, 123))["verdict"] == "slower"
    assert stats.change_from_intervals((100, 90, 110), (120, 105, 135))["verdict"] == "same"
    assert stats.change_from_intervals((100, 99, 101), (105, 104, 106))["verdict"] == "same"


def test_mann_whitney_p_matches_the_exact_value_on_a_small_case():
    # 5 vs 5, complete separation: exact two-sided p = 2/252 = 0.0079
    p = stats.mann_whitney_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert 0.005 < p < 0.015
    assert stats.mann_whitney_p([1, 2, 3], [1, 2, 3]) == 1.0
