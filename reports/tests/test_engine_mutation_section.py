"""The engine's mutation table in the Verification section: per function, killed, equivalent
(with the reason) and open survivors from mutation_engine.json; a note, not an error, without
the file."""

from __future__ import annotations

import json

from reports.build import build_report
from reports.tests.fixtures import write_fixture_artifacts

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
    dirs = write_fixture_artifacts(tmp_path)
    if payload is not None:
        (dirs["artifacts"] / "mutation_engine.json").write_text(json.dumps(payload))
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    return build_report(tmp_path / "out", dirs["artifacts"], None, dirs["asv_results"]
                        ).read_text()


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
