"""The Reliability section: one row per fault class from reliability.json (rows of parallel
workers summed, a class that did not hold marked), and no section at all without the file."""

from __future__ import annotations

import json

from reports.build import build_report
from reports.sections import reliability
from reports.tests.fixtures import write_fixture_artifacts
from reports.tests.test_report_build import SECTIONS, Page

ROWS = [
    {"fault": "bad CLI invocation (table)", "outcome": "one line, exit 2", "tried": 60,
     "held": 60, "tests": ["test_cli_errors.py"], "run": "r1", "worker": "gw0"},
    {"fault": "bad CLI invocation (table)", "outcome": "one line, exit 2", "tried": 47,
     "held": 47, "tests": ["test_cli_errors.py"], "run": "r1", "worker": "gw1"},
    {"fault": "diverging run", "outcome": "stopped <naming> the op", "tried": 2, "held": 1,
     "tests": ["test_divergence.py"], "run": "r1", "worker": "gw0"},
]


def _build(tmp_path, monkeypatch, rows):
    dirs = write_fixture_artifacts(tmp_path)
    if rows is not None:
        (dirs["artifacts"] / "reliability.json").write_text(json.dumps({"rows": rows}))
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    return build_report(tmp_path / "out", dirs["artifacts"], None, dirs["asv_results"]
                        ).read_text()


def test_reliability_table_sums_workers_and_marks_what_did_not_hold(tmp_path, monkeypatch):
    html = _build(tmp_path, monkeypatch, ROWS)
    page = Page(html)
    assert list(page.sections) == [*SECTIONS[:-1], "reliability", SECTIONS[-1]]
    assert page.sections["reliability"]["tables"] == 1
    assert page.sections["reliability"]["error"] == 0
    section = html.split('id="reliability"')[1]
    assert ">107<" in section and "108 of 109 cases held across 2 fault classes" in section
    assert '<td class="fail">1</td>' in section.replace("  ", "")  # 1 of 2 held: marked
    assert "stopped &lt;naming&gt; the op" in section  # escaped


class _Inputs:
    """The one Inputs method the section uses, over a folder."""

    def __init__(self, folder):
        self.artifacts = folder

    def json(self, name):
        path = self.artifacts / name
        return json.loads(path.read_text()) if path.exists() else None


def test_no_reliability_json_no_section(tmp_path):
    """A page built without the artifact gets no empty box (the full-page tests' SECTIONS)."""
    assert reliability.sections(_Inputs(tmp_path), lambda *a: {"built": a}) == {}
    (tmp_path / "reliability.json").write_text(json.dumps({"rows": ROWS}))
    assert list(reliability.sections(_Inputs(tmp_path), lambda *a: {"built": a})) == [
        "reliability"]


def test_unusable_reliability_json_is_an_error_note(tmp_path):
    for payload in ([], {"rows": []}, {"rows": "x"}):
        (tmp_path / "reliability.json").write_text(json.dumps(payload))
        parts = reliability.build(_Inputs(tmp_path))["parts"]
        assert [p["kind"] for p in parts] == ["error"]
