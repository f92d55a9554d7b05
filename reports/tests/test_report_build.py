"""The report builds from synthetic artifacts and from nothing, escapes what it shows, and turns
bad inputs into notes on the page instead of crashing."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from reports import asv_history
from reports.build import build_report, main
from reports.figures import plotly_js
from reports.sections.memory import fit_slope
from reports.sections.training import attention_maps
from reports.tests import fixtures
from reports.tests.fixtures import write_fixture_artifacts

SECTIONS = ["summary", "job", "verification", "performance", "memory", "training", "provenance"]


class Page(HTMLParser):
    """Collects, per <section id>, the plot divs, tables, and missing/error notes."""

    def __init__(self, html: str):
        super().__init__()
        self.sections: dict[str, dict[str, int]] = {}
        self.current: str | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.current = a.get("id")
            self.sections[self.current] = {"plots": 0, "tables": 0, "missing": 0, "error": 0}
        elif self.current:
            cls = (a.get("class") or "").split()
            sec = self.sections[self.current]
            sec["plots"] += tag == "div" and "plotly-graph-div" in cls
            sec["tables"] += tag == "table"
            sec["missing"] += tag == "div" and "missing" in cls
            sec["error"] += tag == "div" and "error" in cls


def build(tmp_path: Path, monkeypatch, fixture: bool = True) -> str:
    if fixture:
        dirs = write_fixture_artifacts(tmp_path)
    else:
        dirs = {"artifacts": tmp_path / "empty", "asv_results": tmp_path / "no-asv"}
        dirs["artifacts"].mkdir()
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    path = build_report(tmp_path / "out", dirs["artifacts"], None, dirs["asv_results"])
    assert path == tmp_path / "out" / "index.html"
    return path.read_text()


def test_report_from_fixture_has_every_section_with_plots_and_tables(tmp_path, monkeypatch):
    html = build(tmp_path, monkeypatch)
    page = Page(html)
    assert list(page.sections) == SECTIONS
    plots = {k: v["plots"] for k, v in page.sections.items()}
    # optimizer per-step; ratios, scaling, per-op profile, asv history; memory pair; loss
    # curves and attention
    assert plots == {"summary": 0, "job": 0, "verification": 1, "performance": 4, "memory": 1,
                     "training": 2, "provenance": 0}
    for sid in ("job", "verification", "performance", "memory", "training", "provenance"):
        assert page.sections[sid]["tables"] > 0, sid
    assert all(s["error"] == 0 for s in page.sections.values()), page.sections
    # Everything the fixture provides is there, so nothing may be reported missing.
    assert all(s["missing"] == 0 for s in page.sections.values()), page.sections


def test_report_inlines_plotly_once_and_references_nothing_remote(tmp_path, monkeypatch):
    html = build(tmp_path, monkeypatch)
    marker = plotly_js()[:300]
    assert html.count(marker) == 1
    assert not re.search(r"<script[^>]+src=", html)
    assert not re.search(r"<link[^>]+href=", html)
    assert 'src="http' not in html


def test_report_shows_figures_from_the_fixture(tmp_path, monkeypatch):
    html = build(tmp_path, monkeypatch)
    assert "104 / 105" not in html  # one record failed, one xfailed: 103 passes of 105
    assert "103 / 105" in html
    assert "float64 cancellation in this shape" in html  # the xfail reason, from JUnit
    assert "AssertionError: matmul gradient off by 2e-2" in html  # the failing test
    assert "h.0.attn.c_attn.weight" in html  # model parity by parameter name
    assert "161,985" in html  # parameter count from config.json
    assert "To be or not" in html  # the sample after training
    assert "95.3%" in html  # mutation kill rate 41 / 43
    assert "1.139" in html  # peak / budget = 41 / 36
    assert "cccccccc" in html  # latest asv commit
    assert 'title="rss.gc_enabled.rss_mb">gc on: RSS</td>' in html  # labelled; path on hover
    assert "rss.gc_enabled.steps" not in html  # step indices are the x axis, not a series
    assert "linear:matmul" in html  # per-op profile label (scope:op)


def test_report_from_empty_artifacts_says_what_is_missing(tmp_path, monkeypatch):
    html = build(tmp_path, monkeypatch, fixture=False)
    page = Page(html)
    assert list(page.sections) == SECTIONS
    for sid in ("verification", "performance", "memory", "training"):
        assert page.sections[sid]["missing"] >= 1, sid
        assert page.sections[sid]["error"] == 0, sid
    for what in ("verification.json", "bench.json", "memory.json", "trace.json",
                 "No asv results", "No training run folder", "main_job.json"):
        assert what in html, what
    assert "could not be built" not in html


def test_report_escapes_names_from_artifacts(tmp_path, monkeypatch):
    art = tmp_path / "art"
    art.mkdir()
    (art / "verification.json").write_text(json.dumps({"records": [
        {"check": "gradcheck", "op": "<b>", "sample": "<script>alert(1)</script>",
         "max_abs": 1e-9, "max_rel": 1e-8, "tol": 1e-6, "status": "pass", "test": "t"}]}))
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(art))
    html = build_report(tmp_path / "out", art, [], tmp_path / "none").read_text()
    assert "&lt;b&gt;" in html
    assert "<b></td>" not in html and "<td><b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html


def test_report_turns_bad_inputs_into_notes(tmp_path, monkeypatch):
    dirs = write_fixture_artifacts(tmp_path)
    art = dirs["artifacts"]
    (art / "verification.json").write_text('{"records": [')  # truncated
    (art / "memory.json").write_text(json.dumps({"rss_mb": "not a list"}))
    (art / "trace.json").write_text(json.dumps({"attention": [{"layer": 0, "probs": [1, 2]}]}))
    (art / "bench.json").write_text(json.dumps([]))
    (art / "junit-memory.xml").write_text("<testsuite><testcase")
    with open(art / "runs" / "main" / "metrics.jsonl", "a") as f:
        f.write('{"kind": "step", "ste')  # a torn last line
    bad_asv = dirs["asv_results"] / "ci" / "dddddddd-existing-py.json"
    bad_asv.write_text(json.dumps({"commit_hash": "d" * 40}))  # no results
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(art))
    html = build_report(tmp_path / "out", art, None, dirs["asv_results"]).read_text()
    page = Page(html)
    assert list(page.sections) == SECTIONS
    assert "unreadable" in html  # verification.json in the inputs table
    assert "verification.json is missing or unreadable" in html
    assert "memory.json holds no per-step series" in html
    assert "attention probabilities of layer 0 have shape (2,)" in html
    assert "junit-memory.xml: not a readable JUnit XML file" in html
    assert "1 line(s) of metrics.jsonl could not be parsed" in html
    assert "dddddddd-existing-py.json: KeyError" in html
    assert "could not be built" not in html  # each problem is handled where it arises
    assert page.sections["training"]["plots"] == 1  # the loss curve survives the torn line


def test_report_lists_registered_ops_without_gradcheck(tmp_path, monkeypatch):
    html = build(tmp_path, monkeypatch)
    reg = fixtures.REGISTRY  # as the suite recorded it: the report imports neither suite nor lib
    row = re.search(r"registered but never gradchecked</th><td>([^<]*)<", html)
    assert row, "coverage row missing"
    unchecked = set(row.group(1).split(", "))
    flat = set(reg["non_differentiable"])
    assert unchecked == {"exp", "layer_norm_composite"}
    row = re.search(r"non-differentiable \(no gradient to check[^<]*</th><td>([^<]*)<", html)
    assert row and set(row.group(1).split(", ")) == flat
    assert "float32 cancellation near 0 (made up)" in html  # a declared xfail, from the JSON


def test_report_imports_no_suite_and_no_library():
    """reports/ reads JSON only: no module in it imports verification, memory, benchmarks or
    minitorch (the main job starts them as commands)."""
    import ast

    root = Path(__file__).resolve().parent.parent
    bad = []
    for path in sorted(root.rglob("*.py")):
        if "tests" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                else [])
            for name in names:
                top = name.split(".")[0]
                if top in ("verification", "memory", "benchmarks", "minitorch"):
                    bad.append(f"{path.relative_to(root)}: {name}")
    assert not bad, bad


def test_asv_history_reads_every_commit_and_parameter(tmp_path):
    dirs = write_fixture_artifacts(tmp_path)
    hist = asv_history.load(dirs["asv_results"])
    assert hist is not None and not hist.problems
    assert [c for _, c in hist.commits()] == ["a" * 40, "b" * 40, "c" * 40]
    pts = hist.series[("bench_model.TrainStep.time_train_step", "gpt2-mini, float32")]
    assert [round(p.value, 6) for p in pts] == [0.09, 0.099, 0.108]  # third of four combos
    assert asv_history.load(tmp_path / "nowhere") is None


def test_memory_slope_fit_is_exact_on_a_line_and_flat_on_a_constant():
    xs = [float(i) for i in range(300)]
    fit = fit_slope(xs, [5.0 + 0.25 * x for x in xs])
    assert fit["slope"] == pytest.approx(0.25) and fit["x0"] == 50.0
    assert fit_slope(xs, [7.0] * 300)["slope"] == pytest.approx(0.0, abs=1e-12)
    # warm-up growth before step 50 is excluded from the fit
    assert fit_slope(xs, [min(x, 50.0) for x in xs])["slope"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("layout", ["rows", "nested", "per_layer"])
def test_attention_maps_accepts_tracer_layouts(layout):
    import numpy as np

    probs = np.tril(np.ones((2, 3, 4, 4)))  # (layer, head, T, T)
    trace = {"tokens": ["a", " ", "b", "\n"]}
    if layout == "rows":
        trace["attention"] = [{"layer": i, "head": h, "probs": probs[i, h].tolist()}
                              for i in range(2) for h in range(3)]
    elif layout == "nested":
        trace["attention"] = probs.tolist()
    else:
        trace["attention"] = {f"h.{i}": probs[i].tolist() for i in range(2)}
    mats, tokens = attention_maps(trace)
    assert [(m[0], m[1]) for m in mats] == [(i, h) for i in range(2) for h in range(3)]
    assert tokens == ["a", "␣", "b", "⏎"]


def test_report_cli_prints_the_page_path(tmp_path, monkeypatch, capsys):
    dirs = write_fixture_artifacts(tmp_path)
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    assert main(["--out", str(tmp_path / "o"), "--artifacts", str(dirs["artifacts"]),
                 "--asv-results", str(dirs["asv_results"])]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == str((tmp_path / "o" / "index.html").resolve())


def test_report_flags_inputs_older_than_the_main_job(tmp_path, monkeypatch):
    """An artifact the main job did not rewrite (its step failed) must not pass for a new one."""
    import time

    dirs = write_fixture_artifacts(tmp_path)
    art = dirs["artifacts"]
    job = json.loads((art / "main_job.json").read_text())
    job["started_epoch"] = time.time() + 60  # every fixture file predates this "run"
    (art / "main_job.json").write_text(json.dumps(job))
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(art))
    html = build_report(tmp_path / "out", art, None, dirs["asv_results"]).read_text()
    row = re.search(r"<td[^>]*>verification\.json</td><td[^>]*>([^<]*)</td>", html)
    assert row and row.group(1) == "older than the main job"
    job["started_epoch"] = time.time() - 3600  # written during the run: plain "found"
    (art / "main_job.json").write_text(json.dumps(job))
    html = build_report(tmp_path / "out", art, None, dirs["asv_results"]).read_text()
    row = re.search(r"<td[^>]*>verification\.json</td><td[^>]*>([^<]*)</td>", html)
    assert row and row.group(1) == "found"


def _text(html: str) -> str:
    """The page's visible text, tags dropped and whitespace collapsed."""
    import html as h

    return " ".join(h.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_summary_card_states_step_time_ratios_for_the_train_configuration(tmp_path,
                                                                          monkeypatch):
    html = build(tmp_path, monkeypatch)
    text = _text(html[html.index('<section id="summary">'):html.index('<section id="job">')])
    # seed, float32, tuned allocator of the latest (2-thread) run: 1.2 * 0.9, CPU +0.02
    assert "minitorch / PyTorch: 1.08× (wall), 1.10× (CPU)" in text
    assert "minitorch / NumPy: 0.94× (wall), 0.95× (CPU)" in text
    assert "seed preset, float32, tuned allocator (as `minitorch train` runs)" in text
    assert "2 BLAS threads, commit eeeeeee" in text
    assert "With 1 BLAS thread (commit fffffff): 1.62× PyTorch, 1.42× NumPy (wall)" in text
    assert "ratio_vs" not in text and "cpu.ratio" not in text  # no raw keys


def test_summary_card_says_when_it_falls_back_to_another_configuration(tmp_path, monkeypatch):
    """Negative control: without tuned-allocator rows the card names the row it used."""
    dirs = write_fixture_artifacts(tmp_path)
    bench = json.loads((dirs["artifacts"] / "bench.json").read_text())
    for run in (bench["peers"], *bench["peers_by_threads"].values()):
        run["rows"] = [r for r in run["rows"] if r["malloc"] == "default"]
    (dirs["artifacts"] / "bench.json").write_text(json.dumps(bench))
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    text = _text(build_report(tmp_path / "out", dirs["artifacts"], None,
                              dirs["asv_results"]).read_text())
    assert "minitorch / PyTorch: 1.20× (wall), 1.22× (CPU)" in text
    assert "seed preset, float32, glibc default allocator," in text
    assert "as `minitorch train` runs" not in text


def test_peer_run_stored_twice_is_shown_once(tmp_path, monkeypatch):
    text = _text(build(tmp_path, monkeypatch))
    # "peers" and "peers_by_threads.2" are the same run; only the 1-thread run is "earlier"
    assert "Earlier and labelled peer runs (1 run)" in text
    assert text.count("Step time per configuration (latest run") == 1


def test_mutation_table_has_one_row_per_op_with_survivors_and_commit(tmp_path, monkeypatch):
    html = build(tmp_path, monkeypatch)
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", html, flags=re.S):
        cells = [_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)]
        if len(cells) == 8 and cells[0] in ("mul", "softmax"):
            rows[cells[0]] = cells
    assert rows["mul"] == ["mul", "41", "40", "1", "0", "98%",
                           "line 12: swap returned gradients", "1111111"]
    assert rows["softmax"] == ["softmax", "2", "1", "1", "0", "50%", "line 9: axis=-1 -> 0",
                               "2222222"]
    text = _text(html)
    assert "No mutants (no backward rule): argmax." in text
    assert "1111111 (inferred)" in text  # the legacy run, commit inferred
    assert "table.mul.killed" not in text  # no flattened key/value dump


def test_mutation_sample_alone_fills_the_section_and_names_the_full_run(tmp_path, monkeypatch):
    dirs = write_fixture_artifacts(tmp_path)
    full = dirs["artifacts"] / "mutation.json"
    payload = json.loads(full.read_text())
    full.unlink()
    payload["runs"] = [{**payload["runs"][-1], "sample": {"mutants": 43, "of": 466, "seed": 0}}]
    (dirs["artifacts"] / "mutation-sample.json").write_text(json.dumps(payload))
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    html = build_report(tmp_path / "out", dirs["artifacts"], None, dirs["asv_results"]
                        ).read_text()
    page = Page(html)
    assert page.sections["verification"]["missing"] == 0
    text = _text(html)
    assert "sample of 43 mutants" in text and "a seeded sample of 43 of the 466" in text
    assert "make mutation" in text
    assert "95.3%" in text  # the headline card, from the sample


def test_fresh_clone_page_names_the_command_of_each_long_run_and_shows_relative_paths(
        tmp_path, monkeypatch):
    """What `make report` leaves out (fuzz.json, mutation.json, mutation_engine.json) reads as
    "not run yet" with the command that adds it, not as missing; the inputs table names files
    relative to the repository (here tmp_path), never by the building machine's absolute path."""
    from reports import inputs

    monkeypatch.setattr(inputs, "ROOT", tmp_path)
    dirs = write_fixture_artifacts(tmp_path)
    (dirs["artifacts"] / "mutation.json").unlink()
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    html = build_report(tmp_path / "out", dirs["artifacts"], None, dirs["asv_results"]
                        ).read_text()
    prov = html[html.index('<section id="provenance">'):]
    table = prov[prov.index("Inputs read by this report"):prov.index("What the artifacts say")]
    rows = {m[0]: m[1:] for m in re.findall(
        r'<tr><td class="">([^<]+)</td><td class="([a-z]*)">([^<]+)</td><td class="">([^<]*)</td>',
        table)}
    for name, command in (("fuzz.json", "make fuzz"), ("mutation.json", "make mutation"),
                          ("mutation_engine.json", "python -m verification.mutate_engine")):
        cls, status, detail = rows[name]
        assert (cls, status) == ("none", "not run yet"), rows[name]
        assert detail.startswith("run `" + command) and " to add the " in detail, detail
    assert "100,000-program run" in rows["fuzz.json"][2]
    assert rows["verification.json"][:2] == ("pass", "found")
    where = [detail for _, _, detail in rows.values()]
    assert any(d.startswith(f"{dirs['artifacts'].name}/verification.json · written ")
               for d in where), where
    assert str(tmp_path) not in prov
