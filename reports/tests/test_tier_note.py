"""The report says which tier of the suites the main job ran: the fast one unless --full."""

from __future__ import annotations

import json
import re

import pytest

from reports.build import build_report

from .fixtures import write_fixture_artifacts


@pytest.mark.parametrize("extra, says", [
    ([], "ran the suites&#39; fast tier (pytest -m &#34;not slow&#34;)"),
    (["--full"], "ran every tier of the suites (--full)"),
])
def test_the_page_names_the_tier_the_main_job_ran(tmp_path, monkeypatch, extra, says):
    dirs = write_fixture_artifacts(tmp_path)
    art = dirs["artifacts"]
    job = json.loads((art / "main_job.json").read_text())
    job["command"] = " ".join(["python -m reports.main_job --out reports/out", *extra])
    (art / "main_job.json").write_text(json.dumps(job))
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(art))
    html = build_report(tmp_path / "out", art, None, dirs["asv_results"]).read_text()
    assert says in html
    other = "every tier" if not extra else "fast tier"
    assert not re.search(other, html)
