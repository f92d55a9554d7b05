"""Statistics of the benchmark suite: medians with 95 % confidence intervals, the reliability
rule, target verdicts and significant-change detection. Pure Python (stdlib only), no timing.

Every reported time or ratio is a `Estimate` (median, 95 % CI from order statistics, n). A result
gets a meets/misses verdict only when it is reliable: enough samples survived the outside-load
check and the interval is narrow. A change between two series is flagged only when a
Mann-Whitney U test finds it significant AND the medians differ by at least `threshold`.
reports/asv_history.py mirrors `change()` for the history table (reports may not import this
package); benchmarks/tests/test_stats.py checks both agree on the same series.
"""

from __future__ import annotations

import math
import os
import statistics
from dataclasses import asdict, dataclass

MAX_LOAD = float(os.environ.get("MINITORCH_BENCH_MAX_LOAD", "0.25"))  # cores used by others
MAX_CI = float(os.environ.get("MINITORCH_BENCH_MAX_CI", "0.10"))  # CI half-width / median
MIN_KEPT = 0.5  # a result needs at least this share of its samples kept (not dropped for load)
MIN_N = 6  # below 6 samples no 95 % order-statistic interval for a median exists
THRESHOLD = 0.10  # change detection: the smallest change worth flagging (10 %)
ALPHA = 0.05  # change detection: two-sided significance level


@dataclass(frozen=True)
class Estimate:
    median: float
    lo: float | None  # 95 % CI of the median; None when n < MIN_N
    hi: float | None
    n: int

    @property
    def half_width(self) -> float:
        """Relative CI half-width (0.05 = ±5 %); inf when there is no interval."""
        if self.lo is None or self.hi is None or self.median == 0:
            return math.inf
        return (self.hi - self.lo) / 2 / abs(self.median)

    def to_dict(self) -> dict:
        return {**asdict(self), "ci_half_width": _finite(self.half_width)}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def median_ci(xs, level: float = 0.95) -> Estimate:
    """Median and its distribution-free CI: order statistics x_(k), x_(n+1-k) with k the
    largest rank such that P(Binomial(n, 1/2) < k) <= (1 - level) / 2."""
    xs = sorted(float(x) for x in xs)
    n = len(xs)
    if n == 0:
        raise ValueError("median_ci: no samples")
    med = statistics.median(xs)
    k, cum, tail = 0, 0.0, (1 - level) / 2
    for j in range(n):  # cum = P(B <= j)
        cum += math.comb(n, j) / 2**n
        if cum > tail:
            break
        k = j + 1
    if k == 0:
        return Estimate(med, None, None, n)
    return Estimate(med, xs[k - 1], xs[n - k], n)


def reliability(est: Estimate, kept: int, total: int, load: float | None,
                max_ci: float = MAX_CI, min_kept: float = MIN_KEPT) -> dict:
    """{"reliable": bool, "reason": why not (or ""), "load", "ci_half_width"} for one result.

    Unreliable when fewer than `min_kept` of the samples survived the outside-load check, when
    there are too few for an interval, or when the interval is wider than ±max_ci."""
    reasons = []
    if total < MIN_N or est.n < MIN_N:
        reasons.append(f"{min(total, est.n)} samples, too few for a 95 % interval")
    elif kept < max(MIN_N, math.ceil(min_kept * total)):
        reasons.append(f"{total - kept} of {total} samples dropped for outside load")
    if est.n >= MIN_N and est.half_width > max_ci:
        reasons.append(f"CI ±{est.half_width:.0%} wider than ±{max_ci:.0%}")
    return {"reliable": not reasons, "reason": "; ".join(reasons), "load": load,
            "ci_half_width": _finite(est.half_width)}


def unreliable_text(rel: dict) -> str:
    """'not measured reliably: load 1.8 cores, CI ±23 %' (the words the terminal, JSON and
    report all use)."""
    load = rel.get("load")
    ci = rel.get("ci_half_width")
    load_s = f"load {load:.2f} cores" if isinstance(load, (int, float)) else "load ?"
    ci_s = f"CI ±{ci:.0%}" if isinstance(ci, (int, float)) else "no CI"
    return f"not measured reliably: {load_s}, {ci_s}"


def target_verdict(est: Estimate, target: float, rel: dict) -> str | None:
    """'meets' when the whole interval is at or below the target, 'misses' when it is above,
    'undecided' when the interval straddles it; None (no verdict) when unreliable."""
    if not rel.get("reliable"):
        return None
    if est.hi is not None and est.hi <= target:
        return "meets"
    if est.lo is not None and est.lo > target:
        return "misses"
    return "undecided"


# ---------------------------------------------------------------- change detection


def mann_whitney_p(a, b) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation with tie and
    continuity corrections; adequate from about 5 samples a side)."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return 1.0
    pooled = sorted([(float(x), 0) for x in a] + [(float(x), 1) for x in b])
    ranks = [0.0] * len(pooled)
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        t = j - i + 1
        ties += t**3 - t
        i = j + 1
    r1 = sum(r for r, (_, g) in zip(ranks, pooled) if g == 0)
    u = r1 - n1 * (n1 + 1) / 2
    mu = n1 * n2 / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (abs(u - mu) - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


def change(a, b, threshold: float = THRESHOLD, alpha: float = ALPHA) -> dict:
    """Compare two series of per-sample times (a = before, b = after).

    Returns {"ratio": median(b)/median(a), "p": Mann-Whitney p, "verdict"} where verdict is
    "slower"/"faster" only when p < alpha AND the ratio is beyond 1 ± threshold, else "same"."""
    ma, mb = statistics.median(a), statistics.median(b)
    ratio = mb / ma if ma else math.inf
    p = mann_whitney_p(a, b)
    verdict = "same"
    if p < alpha and ratio >= 1 + threshold:
        verdict = "slower"
    elif p < alpha and ratio <= 1 / (1 + threshold):
        verdict = "faster"
    return {"ratio": ratio, "p": p, "verdict": verdict, "n": [len(a), len(b)],
            "test": "mann-whitney"}


def change_from_intervals(a: tuple[float, float, float], b: tuple[float, float, float],
                          threshold: float = THRESHOLD) -> dict:
    """The fallback when only (median, lo, hi) are stored: non-overlapping intervals plus a
    change of at least `threshold`."""
    ratio = b[0] / a[0] if a[0] else math.inf
    verdict = "same"
    if b[1] > a[2] and ratio >= 1 + threshold:
        verdict = "slower"
    elif b[2] < a[1] and ratio <= 1 / (1 + threshold):
        verdict = "faster"
    return {"ratio": ratio, "p": None, "verdict": verdict, "test": "intervals"}
