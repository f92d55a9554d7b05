"""Scaling exponents that contradict what the report's caption promises are flagged."""

from __future__ import annotations

from benchmarks import scaling


def test_exponent_outside_the_expected_range_is_flagged():
    row = {"axis": "seq", "slope": 1.3, "attention_slope": 3.6, "rest_slope": 0.95,
           "expected": {"slope": scaling.EXPECTED["seq"],
                        "attention_slope": scaling.EXPECTED["attention_core"],
                        "rest_slope": scaling.EXPECTED["rest"]}}
    assert scaling.contradictions(row) == ["attention_slope 3.60 outside the expected [1.5, 2.5]"]
    row["attention_slope"] = 2.1
    assert scaling.contradictions(row) == []


def test_slope_reads_the_exponent_of_a_power_law():
    xs = [8, 16, 32, 64]
    assert abs(scaling._slope(xs, [x**2 for x in xs]) - 2.0) < 1e-9
    assert abs(scaling._slope(xs, [5.0 + x for x in xs]) - 1.0) < 0.2
