"""Issue 31's report tables from asv results: a ratio the harness did not measure reliably
(stored as nan) reads 'no verdict', never as a number; a measured one is checked against its
target."""

from __future__ import annotations

from reports import asv_history as A
from reports.sections import dispatch


def _hist(values: dict) -> A.AsvHistory:
    hist = A.AsvHistory()
    for (bench, combo), v in values.items():
        hist.series[(bench, combo)] = [A.Point("c0ffee", 1, "m", v)]
    return hist


def _texts(part):
    return [[c["text"] if isinstance(c, dict) else c for c in row] for row in part["rows"]]


def test_dispatch_table_shows_times_ratios_and_no_verdict_for_unreliable_ratios():
    d = "bench_dispatch."
    hist = _hist({(d + "Dispatch.time_dispatch_forward", "arithmetic, 8"): 3e-5,
                  (d + "Dispatch.time_dispatch_forward_backward", "arithmetic, 8"): 9e-5,
                  (d + "DispatchRatio.track_dispatch_ratio_vs_torch",
                   "arithmetic, 8, forward"): 0.8,
                  (d + "DispatchRatio.track_dispatch_ratio_vs_torch",
                   "arithmetic, 8, forward_backward"): None})
    (table,) = dispatch.parts(hist)
    assert _texts(table) == [["arithmetic", "8", "30 µs", "0.8", "90 µs", dispatch.NO_VERDICT]]
    assert table["rows"][0][3]["cls"] == "num pass"


def test_user_model_table_has_a_ratio_column_per_thread_count():
    u = "bench_user_models."
    hist = _hist({(u + "UserModelStep.time_train_iteration", "bigram, minitorch"): 0.009,
                  (u + "UserModelStep.time_train_iteration", "bigram, torch"): 0.004,
                  (u + "UserModelRatio.track_user_ratio_vs_torch", "bigram, 1"): 2.2,
                  (u + "UserModelRatio.track_user_ratio_vs_torch", "bigram, 2"): None})
    (table,) = dispatch.parts(hist)
    assert "÷ torch, 2 thread(s)" in table["columns"]
    row = _texts(table)[0]
    assert row[:6] == ["bigram", "9 ms", "4 ms", "—", "2.2", dispatch.NO_VERDICT]
    assert table["rows"][0][4]["cls"] == "num warn"  # above the batching loop's 1.5x target
