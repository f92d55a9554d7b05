"""The engine's mutation table in the Verification section: per function, killed, equivalent
(with the reason) and open survivors from mutation_engine.json; a note, not an error, without
the file."""

from __future__ import annotations

from reports.tests.fixtures import build_page

MUTANTS = [
    {"file": "minitorch/engine/graph.py", "function": "unbroadcast", "line": 21,
     "operator": "condition -> True", "change": "a -> b", "status": "killed", "equivalent": None},
    {"file": "minitorch/engine/graph.py", "function": "unbroadcast", "line": 22,
     "operator": "return early", "change": "c -> d", "status": "survived",
     "equivalent": "same array either way"},
    {"file": "minitorch/engine/graph.py", "function": "backward", "line": 70,
     "operator": "drop statement", "change": "e -> f", "status": "survived", "equivalent": None},
]


def _build(tmp_path, monkeypatch, payload):
    return build_page(tmp_path, monkeypatch, {"mutation_engine.json": payload})


def test_engine_mutation_table_shows_open_survivors(tmp_path, monkeypatch):
    html = _build(tmp_path, monkeypatch, {"total": 3, "killed": 1, "commit": "abcdef123",
                                          "mutants": MUTANTS})
    section = html.split("Mutation testing of the engine")[1]
    assert "same array either way" in section  # the equivalence reason is shown
    assert "line 70: drop statement" in section  # the open survivor is named
    assert "1 of 3 mutants killed" in section


def test_engine_mutation_without_a_run_is_a_note(tmp_path, monkeypatch):
    html = _build(tmp_path, monkeypatch, None)
    section = html.split("Mutation testing of the engine")[1][:2000]
    assert "python -m verification.mutate_engine" in section


def test_fuzz_results_table_counts_and_disagreements(tmp_path, monkeypatch):
    html = build_page(tmp_path, monkeypatch, {"fuzz.json": {
        "programs": 1000, "target_programs": 1000, "complete": True, "seconds": 5, "jobs": 1,
        "families": {"binary:+": 600}, "both_raised": {"reduce:argmax": 3},
        "deliberate_differences": {"second_backward_needs_retain_graph": 7},
        "max_error_over_tol": {"float64": 0.004},
        "failures": [{"signature": "nonfinite @ backward:x", "program": "x = lib.tensor(1.0)"}]}})
    section = html.split("Random programs against PyTorch")[1]
    assert "1 disagreement(s) with torch" in section and "x = lib.tensor(1.0)" in section
    assert "second_backward_needs_retain_graph" in section
