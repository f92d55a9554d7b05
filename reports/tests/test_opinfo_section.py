"""The OpInfo table in the Verification section: per-dtype totals, each exemption with its reason
and its xfailed samples, the OpInfos with failures; a note, not an error, without opinfo.json."""

from __future__ import annotations

from reports.tests.fixtures import build_page

TITLE = "OpInfo database (torch.testing"
RUN = {
    "ops": {
        "add": {"target": "torch.add", "counts": {"float64": {"pass": 9}, "int64": {"pass": 9}},
                "failures": [], "xfail": None},
        "pow": {"target": "torch.pow", "counts": {"float32": {"pass": 3, "xfail": 2}},
                "failures": [], "xfail": None},
        "flip": {"target": "torch.flip", "counts": {"float64": {"pass": 1, "fail": 1}},
                 "failures": ["float64 #1: output 0: values differ"], "xfail": None},
    },
    "totals": {"float64": {"pass": 10, "fail": 1}, "float32": {"pass": 3, "xfail": 2},
               "int64": {"pass": 9, "unsupported": 4}},
    "mapped": 3, "database": 702, "not_in_api": {"conv": 6, "linalg": 67},
    "xfail": {"pow:float32": "float32 gradient of the exponent"}, "seconds": 61.5,
    "complete": True,
}


def test_opinfo_table_shows_totals_exemptions_and_failures(tmp_path, monkeypatch):
    html = build_page(tmp_path, monkeypatch, {"opinfo.json": RUN})
    section = html.split(TITLE)[1]
    assert "3 of 702 OpInfos map to minitorch" in section and "linalg 67" in section
    assert "float32 gradient of the exponent" in section  # the exemption and its reason
    assert "float64 #1: output 0: values differ" in section  # the failing OpInfo is named
    assert "9/0/4/0" not in section and "9/0/0/0" in section  # add's int64 cell


def test_opinfo_without_a_run_is_a_note(tmp_path, monkeypatch):
    html = build_page(tmp_path, monkeypatch, {})
    assert "make opinfo" in html.split(TITLE)[1][:2000]
