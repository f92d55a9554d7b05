"""Which training runs the report shows: the main job's (artifacts/runs/) by default; a scratch
run in the repository's runs/ only when asked (--include-runs), marked with its status, and a
broken one listed as broken, never shown as a result (issue 36)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from reports import browser, inputs, main_job
from reports import build as build_mod
from reports.build import build_report, main
from reports.sections.training import run_status
from reports.tests.fixtures import write_fixture_artifacts


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _rows(*rows: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _config(iters: int) -> str:
    return json.dumps({"train": {"preset": "seed", "iters": iters}, "params": 1234})


def scratch_repo(root: Path) -> dict[str, Path]:
    """A repository whose runs/ holds what `minitorch train --out runs/<name>` leaves behind:
    one run stopped at step 3 of 300, one finished, one with a config but no metric, one with
    a truncated config.json and one holding only the trainer's lock. The main job's artifacts
    sit where `make report` writes them (reports/artifacts/, with runs/main)."""
    dirs = write_fixture_artifacts(root / "reports")
    runs = root / "runs"
    _write(runs / "scratch" / "config.json", _config(300))
    _write(runs / "scratch" / "metrics.jsonl", _rows(
        {"kind": "eval", "step": 0, "train": 4.2, "val": 4.3, "lr": 1e-3, "time": 0.1},
        *[{"kind": "step", "step": s, "loss": 4.2 - 0.1 * s, "lr": 1e-3} for s in range(3)]))
    _write(runs / "done" / "config.json", _config(2))
    _write(runs / "done" / "metrics.jsonl", _rows(
        {"kind": "eval", "step": 0, "train": 4.2, "val": 4.3, "lr": 1e-3, "time": 0.1},
        {"kind": "step", "step": 0, "loss": 4.2, "lr": 1e-3},
        {"kind": "step", "step": 1, "loss": 4.1, "lr": 1e-3},
        {"kind": "eval", "step": 1, "train": 4.0, "val": 4.1, "lr": 1e-3, "time": 0.2},
        {"kind": "finished", "step": 2}))
    _write(runs / "no-metrics" / "config.json", _config(300))
    _write(runs / "torn-config" / "config.json", '{"train": {"iters": 3')
    _write(runs / "train" / ".lock", "4242\n")
    return {**dirs, "runs": runs}


def _build(root: Path, monkeypatch, **kw) -> str:
    monkeypatch.setattr(inputs, "ROOT", root)
    dirs = scratch_repo(root)
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    html = build_report(root / "out", dirs["artifacts"], None, dirs["asv_results"], **kw)
    return html.read_text()


def _training(html: str) -> str:
    start = html.index('<section id="training">')
    return html[start:html.index("</section>", start)]


def _glance_rows(section: str) -> dict[str, str]:
    """Run name -> its status cell in "Training runs at a glance"."""
    table = section[section.index("Training runs at a glance"):]
    table = table[:table.index("</table>")]
    return dict(re.findall(r"<tr><td[^>]*>([^<]+)</td><td[^>]*>([^<]+)</td>", table))


def test_report_shows_only_the_main_jobs_runs_by_default(tmp_path, monkeypatch):
    html = _build(tmp_path, monkeypatch)
    section = _training(html)
    assert _glance_rows(section) == {"main": "finished"}
    for name in ("scratch", "done", "no-metrics", "torn-config", "runs/train"):
        assert name not in section, name
    assert "Run folders with no results" not in section
    assert "val loss, run main" in html and "lowest of" not in html


def test_report_shows_asked_for_runs_marked_with_their_status(tmp_path, monkeypatch):
    html = _build(tmp_path, monkeypatch, include_runs=[tmp_path / "runs"])
    section = _training(html)
    assert _glance_rows(section) == {"main": "finished",
                                     "runs/done": "finished (--include-runs)",
                                     "runs/scratch": "stopped early (--include-runs)"}
    assert "Run: runs/scratch (stopped early, not from the main job)" in section
    assert "step 3 of 300" in section  # steps 0-2 logged, of the config's iters
    assert "Run: runs/done (finished, not from the main job)" in section
    assert section.count('class="plotly-graph-div"') == 4  # main, done, scratch; attention
    # a run asked for is never the headline's result
    assert "val loss, run main" in html and "lowest of" not in html


def test_report_lists_a_broken_run_as_broken_not_as_a_result(tmp_path, monkeypatch):
    html = _build(tmp_path, monkeypatch, include_runs=[tmp_path / "runs"])
    section = _training(html)
    table = section[section.index("Run folders with no results (3)"):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr><td[^>]*>([^<]+)</td><td[^>]*>([^<]+)</td>"
                      r"<td class=\"([a-z]+)\">([^<]+)</td><td[^>]*>([^<]+)</td>", table)
    got = {name: (origin, cls, status, detail) for name, origin, cls, status, detail in rows}
    assert set(got) == {"runs/no-metrics", "runs/torn-config", "runs/train"}, rows
    assert got["runs/no-metrics"][:3] == ("--include-runs", "fail", "no metrics")
    assert got["runs/torn-config"][:3] == ("--include-runs", "fail", "unreadable")
    assert got["runs/torn-config"][3].startswith("config.json: ")
    assert got["runs/train"][2:] == ("no metrics", "no metrics.jsonl; the folder holds .lock")
    for name in got:  # no curves, samples or config of a broken run
        assert f"Run: {name}" not in section and f"{name}: " not in section, name


def test_report_cli_include_runs_alone_means_the_repositorys_runs(tmp_path, monkeypatch,
                                                                   capsys):
    monkeypatch.setattr(inputs, "ROOT", tmp_path)
    monkeypatch.setattr(build_mod, "ROOT", tmp_path)
    dirs = scratch_repo(tmp_path)
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    common = ["--artifacts", str(dirs["artifacts"]), "--asv-results", str(dirs["asv_results"])]
    assert main(["--out", str(tmp_path / "a"), *common]) == 0
    assert "runs/scratch" not in (tmp_path / "a" / "index.html").read_text()
    assert main(["--out", str(tmp_path / "b"), *common, "--include-runs"]) == 0
    assert "Run: runs/scratch (stopped early" in (tmp_path / "b" / "index.html").read_text()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["--out", str(tmp_path / "c"), *common, "--include-runs", str(tmp_path / "nope")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith(f"error: --include-runs: {tmp_path / 'nope'} is not a folder"), err
    assert "Traceback" not in "\n".join(err)


def test_main_job_passes_the_runs_asked_for_to_the_page(tmp_path, monkeypatch):
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(tmp_path / "art"))
    built: list = []
    monkeypatch.setattr(build_mod, "build_report", lambda out, art, include_runs=None:
                        built.append(include_runs) or out / "index.html")
    monkeypatch.setattr(browser, "unavailable", lambda: "not in this test")
    skip = ["--skip", "train", "verification", "memory", "mutation", "opinfo", "bench", "trace",
            "asv"]
    assert main_job.main(["--out", str(tmp_path / "out"), *skip,
                          "--include-runs", str(tmp_path)]) == 0
    assert built == [[tmp_path], [tmp_path]]  # the page, and again after the browser check
    assert main_job.main(["--out", str(tmp_path / "out"), *skip]) == 0
    assert built[2:] == [None, None]


@pytest.mark.parametrize("files, expected", [
    ({"metrics.jsonl": _rows({"kind": "step", "step": 0, "loss": 1.0}),
      "config.json": _config(1)}, ("finished", "step 1 of 1")),  # step 0 done: 1 of 1
    ({"metrics.jsonl": _rows({"kind": "step", "step": 4, "loss": 1.0},
                             {"kind": "finished", "step": 5})}, ("finished", "step 5")),
    ({"metrics.jsonl": _rows({"kind": "step", "step": 9, "loss": 1.0}),
      "checkpoint.json": json.dumps({"step": 10, "config": {"iters": 10}})},
     ("finished", "step 10 of 10")),
    ({"metrics.jsonl": _rows({"kind": "step", "step": 49, "loss": 1.0}),
      "config.json": _config(300), "checkpoint.json": json.dumps({"step": 50})},
     ("stopped early", "step 50 of 300")),
    ({"metrics.jsonl": _rows({"kind": "step", "step": 7, "loss": 1.0},
                             {"kind": "diverged", "step": 8, "reason": "loss is nan"}),
      "config.json": _config(300)}, ("stopped early", "step 8 of 300; diverged: loss is nan")),
    ({"metrics.jsonl": "", "config.json": _config(300)},
     ("no metrics", "metrics.jsonl is empty (stopped before its first step)")),
    ({}, ("no metrics", "no metrics.jsonl; the folder holds nothing")),
    ({"metrics.jsonl": "{torn\nnot json\n"}, ("unreadable",
                                              "none of the 2 line(s) of metrics.jsonl parse")),
    ({"metrics.jsonl": _rows({"kind": "step", "step": 0, "loss": 1.0}),
      "checkpoint.json": "[1, 2]"}, ("unreadable", "checkpoint.json: not an object")),
], ids=["at-iters", "finished-row", "checkpoint-at-iters", "checkpoint-short", "diverged",
        "empty-metrics", "empty-folder", "garbage-metrics", "checkpoint-not-object"])
def test_run_status_from_the_folders_files(tmp_path, files, expected):
    run = tmp_path / "run"
    run.mkdir()
    for name, text in files.items():
        (run / name).write_text(text)
    assert run_status(run) == expected


def test_a_main_job_run_without_metrics_is_listed_broken_and_leaves_the_headline_empty(
        tmp_path, monkeypatch):
    """The main job's training step failed before its first step: its folder is listed as
    broken (from "main job"), and the summary card says there is no run rather than a loss."""
    monkeypatch.setattr(inputs, "ROOT", tmp_path)
    dirs = write_fixture_artifacts(tmp_path)
    (dirs["artifacts"] / "runs" / "main" / "metrics.jsonl").write_text("")
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    html = build_report(tmp_path / "out", dirs["artifacts"], None, dirs["asv_results"]
                        ).read_text()
    section = _training(html)
    assert re.search(r"<tr><td[^>]*>main</td><td[^>]*>main job</td><td class=\"fail\">"
                     r"no metrics</td>", section), section[:2000]
    assert "Training runs at a glance" not in section and "Run: main" not in section
    assert "no main-job result" in html and "val loss, run main" not in html
    assert "no finished step of a main-job run" in html


def test_with_no_main_job_run_the_headline_points_to_the_runs_asked_for(tmp_path, monkeypatch):
    """RUNS= given and the main job trained nothing: the card says where the runs are shown
    instead of "no run folder" beside a Training section that lists them."""
    monkeypatch.setattr(inputs, "ROOT", tmp_path)
    dirs = scratch_repo(tmp_path)
    shutil.rmtree(dirs["artifacts"] / "runs" / "main")
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(dirs["artifacts"]))
    html = build_report(tmp_path / "out", dirs["artifacts"], None, dirs["asv_results"],
                        include_runs=[tmp_path / "runs"]).read_text()
    assert "no main-job result" in html
    assert "2 other run(s) shown in Training (--include-runs)" in html
