"""The main job records every step's outcome (ok, failed, timed out, skipped) and still builds the
page; the slow steps themselves are exercised by `make report`, not here."""

from __future__ import annotations

import json
import re
import sys

import pytest

from reports import inputs, main_job
from reports.main_job import Job


def test_job_records_success_failure_and_timeout(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(tmp_path))
    monkeypatch.setattr(inputs, "ROOT", tmp_path)  # the logs are inside "the repository"
    monkeypatch.setattr(main_job, "HEARTBEAT_S", 0.2)
    job = Job(tmp_path, ["--test"])
    assert job.run("fine", [sys.executable, "-c", "print('hello')"], timeout=60)
    assert not job.run("broken", [sys.executable, "-c",
                                  "import sys; print('the reason'); sys.exit(3)"], timeout=60)
    assert not job.run("stuck", [sys.executable, "-c", "import time; time.sleep(30)"],
                       timeout=0.5)
    assert not job.call("raises", lambda: 1 / 0)
    steps = {s["name"]: s for s in json.loads((tmp_path / "main_job.json").read_text())["steps"]}
    assert steps["fine"]["status"] == "ok" and steps["fine"]["output"] == ""
    assert steps["broken"]["status"] == "failed" and "exit code 3" in steps["broken"]["detail"]
    assert "the reason" in steps["broken"]["output"]
    assert steps["stuck"]["status"] == "failed" and "timed out" in steps["stuck"]["detail"]
    assert steps["raises"]["detail"].startswith("ZeroDivisionError")
    assert (tmp_path / "logs" / "broken.log").read_text().strip() == "the reason"
    # the page names logs relative to the repository, never the building machine's paths
    assert steps["broken"]["detail"] == "exit code 3; log logs/broken.log"
    assert steps["stuck"]["detail"] == "timed out after 0.5s; log logs/stuck.log"
    # a progress line per step start and end, stamped with the job's elapsed time; a running
    # step says so every HEARTBEAT_S (the stuck step ran 0.5 s: at least one such line)
    lines = capsys.readouterr().err.splitlines()
    stamp = r"\[main job \+\d+m\d\ds\] "
    assert all(re.match(stamp, ln) for ln in lines), lines
    for name in ("fine", "broken", "stuck"):
        assert sum(re.match(stamp + name + ": started \\(log logs/", ln) is not None
                   for ln in lines) == 1, lines
    assert any(re.fullmatch(stamp + r"fine: ok in \d+m\d\ds; exit code 0; log logs/fine\.log", ln)
               for ln in lines), lines
    assert any(re.fullmatch(stamp + r"stuck: running for \d+m\d\ds", ln) for ln in lines), lines


def test_main_job_with_every_step_skipped_still_builds_the_page(tmp_path, monkeypatch, capsys):
    art = tmp_path / "art"
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(art))
    out = tmp_path / "out"
    code = main_job.main(["--out", str(out), "--skip", "train", "verification", "memory",
                          "mutation", "opinfo", "bench", "trace", "asv"])
    assert code == 0
    assert capsys.readouterr().out.strip() == str((out / "index.html").resolve())
    record = json.loads((art / "main_job.json").read_text())
    status = {s["name"]: s["status"] for s in record["steps"]}
    assert {status[n] for n in ("train", "verification", "memory", "mutation", "opinfo", "bench",
                                "trace", "asv")} == {"skipped"}
    assert status["build report"] == "ok"
    assert status["browser check"] in ("ok", "skipped")  # skipped only without Chromium
    html = (out / "index.html").read_text()
    assert "left out with --skip" in html


def test_main_job_rejects_a_missing_corpus(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        main_job.main(["--tinyshakespeare", str(tmp_path / "nope.txt")])
    assert exc.value.code == 2
    assert "nope.txt is not a file" in capsys.readouterr().err


def test_main_job_runs_a_mutation_sample_and_records_asv_by_default(tmp_path, monkeypatch):
    """No option needed for a page without empty sections: the sampled mutation run and this
    commit's short asv run are part of the default job (commands captured, not run)."""
    monkeypatch.setenv("MINITORCH_ARTIFACTS", str(tmp_path / "art"))
    ran: dict[str, list[str]] = {}

    def fake_run(self, name, cmd, timeout, ok_codes=(0,), describe=None):
        ran[name] = cmd
        return True

    monkeypatch.setattr(Job, "run", fake_run)
    real_run = main_job.subprocess.run

    def no_register(cmd, **kw):  # the machine name, without writing ~/.asv-machine.json
        if "benchmarks.machine" in cmd:
            return main_job.subprocess.CompletedProcess(cmd, 0, "cpu-named-machine\n", "")
        return real_run(cmd, **kw)

    monkeypatch.setattr(main_job.subprocess, "run", no_register)
    monkeypatch.setattr(main_job, "build_step", lambda job, out: out / "index.html")
    assert main_job.main(["--out", str(tmp_path / "out"), "--skip", "train", "verification",
                          "memory", "bench", "trace"]) == 0
    assert ran["mutation-sample"][-4:] == ["-m", "verification.mutate_vjps", "--sample", "40"]
    assert ran["opinfo"][-2:] == ["-m", "verification.opinfo"]  # the full OpInfo database
    asv = ran["asv"]
    assert asv[1] == "run" and any(a.startswith("--set-commit-hash=") for a in asv)
    assert asv[asv.index("-b") + 1] == main_job.ASV_BENCH and "repeat=1" in asv
    assert asv[asv.index("--machine") + 1] == "cpu-named-machine"  # as `make bench` names it
