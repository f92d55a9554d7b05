"""`python -m minitorch.train.summary`: tables of real runs, and every bad input (a missing or
non-run folder, missing evaluations, bad --steps, unwritable --plot/--json) as one line,
`minitorch.train.summary: error: ...`, naming the run folder and what is missing, exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from minitorch import cli
from minitorch.train import summary
from verification.test_cli_errors import invoke

TINY = ["--iters", "4", "--eval_interval", "2", "--eval_iters", "1", "--batch_size", "2",
        "--n_layer", "1", "--n_embd", "16", "--n_hidden", "32", "--block_size", "16",
        "--sample_tokens", "4", "--plot", "False", "--no-tune-allocator"]
PREFIX = "minitorch.train.summary: error: "


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A tiny finished run: evaluations at steps 0, 2 and 3."""
    out = tmp_path_factory.mktemp("summary") / "run"
    assert cli.main(["train", *TINY, "--out", str(out)]) == 0
    return out


def _invoke(argv: list[str], capsys) -> tuple[int, str, str]:
    return invoke(argv, capsys, main=summary.main)


def test_summary_tables_the_chosen_steps(run, tmp_path, capsys):
    code, out, err = _invoke([str(run), "--steps", "0,3", "--json", str(tmp_path / "s.json")],
                             capsys)
    assert code == 0, err
    rows = {r["step"]: r for r in (json.loads(line) for line in
                                   (run / "metrics.jsonl").read_text().splitlines())
            if r["kind"] == "eval"}
    assert f"| 3 | {rows[3]['train']:.4f} | {rows[3]['val']:.4f} |" in out
    saved = json.loads((tmp_path / "s.json").read_text())
    assert [r["step"] for r in saved[0]["table"]] == [0, 3] and saved[0]["final"]["step"] == 3


def _not_json(folder: Path, monkeypatch) -> None:
    (folder / "config.json").write_text("{oops")


def _no_evals(folder: Path, monkeypatch) -> None:
    (folder / "metrics.jsonl").write_text('{"kind": "step", "step": 0, "loss": 4.0}\n')


def _append(blob: bytes):
    def damage(folder: Path, monkeypatch) -> None:
        with open(folder / "metrics.jsonl", "ab") as f:
            f.write(blob)
    return damage


def _denied(name: str, method: str):
    """Path.<method> of the file called `name` raises EACCES, as mode 000 does for a non-root
    user (the suite may run as root, which mode bits do not stop)."""
    def damage(folder: Path, monkeypatch) -> None:
        real = getattr(Path, method)

        def denied(self, *a, **k):
            if self.name == name:
                raise PermissionError(13, "Permission denied", str(self))
            return real(self, *a, **k)
        monkeypatch.setattr(Path, method, denied)
    return damage


# (id, argv with {run} = a copy of the run and {tmp} a fresh folder, damage to the copy, words)
CASES = [
    ("default-steps-of-a-short-run", ["{run}"], None,
     ["{run}: no evaluation at steps 1000, 2000, 3000, 3999", "evaluations at steps 0,2,3",
      "--steps"]),
    ("one-missing-step", ["{run}", "--steps", "0,1"], None,
     ["{run}: no evaluation at step 1;", "--steps 0,2,3"]),
    ("folder-missing", ["{tmp}/nothing"], None, ["{tmp}/nothing: no such run folder"]),
    ("folder-is-a-file", ["{run}/config.json"], None, ["config.json is a file"]),
    ("folder-not-a-run", ["{tmp}"], None, ["{tmp}: no config.json"]),
    ("config-not-json", ["{run}"], _not_json, ["{run}: cannot read", "config.json"]),
    ("config-a-list", ["{run}"], lambda f, mp: (f / "config.json").write_text("[1]"),
     ["{run}: ", "config.json has no 'train' config"]),
    ("no-metrics", ["{run}"], lambda f, mp: (f / "metrics.jsonl").unlink(),
     ["{run}: no evaluation rows"]),
    ("no-eval-rows", ["{run}"], _no_evals, ["{run}: no evaluation rows"]),
    ("metrics-undecodable", ["{run}", "--steps", "0"], _append(b"\xff\xfe"),
     ["{run}: cannot read {run}/metrics.jsonl: line {next} is not a JSON object: 'utf-8' "
      "codec can't decode byte 0xff"]),
    ("metrics-torn-line", ["{run}", "--steps", "0"], _append(b'{"kind": "ev'),
     ["{run}: cannot read {run}/metrics.jsonl: line {next} is not a JSON object"]),
    ("metrics-row-not-an-object", ["{run}", "--steps", "0"], _append(b"[1]\n"),
     ["{run}: cannot read {run}/metrics.jsonl: line {next} is not a JSON object"]),
    ("metrics-unreadable", ["{run}", "--steps", "0"], _denied("metrics.jsonl", "read_bytes"),
     ["{run}: cannot read {run}/metrics.jsonl: Permission denied"]),
    ("second-run-missing", ["{run}", "{tmp}/gone", "--steps", "0"], None,
     ["{tmp}/gone: no such run folder"]),
    ("steps-not-numbers", ["{run}", "--steps", "0,last"], None, ["--steps '0,last'"]),
    ("plot-folder-missing", ["{run}", "--steps", "0", "--plot", "{tmp}/no/x.png"], None,
     ["--plot", "does not exist"]),
    ("json-is-a-folder", ["{run}", "--steps", "0", "--json", "{tmp}"], None,
     ["--json", "is a folder"]),
    ("no-runs", [], None, ["the following arguments are required: runs"]),
    ("unknown-flag", ["{run}", "--step", "0"], None,
     ["unrecognized argument --step (did you mean --steps?)"]),
]


@pytest.mark.parametrize("case_id, argv, prep, words", CASES, ids=[c[0] for c in CASES])
def test_summary_bad_input_is_one_line_exit_2(case_id, argv, prep, words, run, tmp_path,
                                              capsys, monkeypatch):
    copy = Path(shutil.copytree(run, tmp_path / "run"))
    rows = len((copy / "metrics.jsonl").read_bytes().splitlines())
    if prep is not None:
        prep(copy, monkeypatch)
    (tmp_path / "case").mkdir()
    fill = lambda s: s.replace("{run}", str(copy)).replace("{tmp}", str(  # noqa: E731
        tmp_path / "case")).replace("{next}", str(rows + 1))
    code, out, err = _invoke([fill(a) for a in argv], capsys)
    assert code == 2, (out, err)
    assert err.startswith(PREFIX) and err.count("\n") == 1 and "Traceback" not in err, err
    for w in words:
        assert fill(w) in err, (fill(w), err)
    assert out == ""  # nothing printed before the error: every run is checked first


def test_summary_failed_write_is_cannot_write(run, tmp_path, capsys, monkeypatch):
    """--json whose write fails (after the tables are printed): one line, 'cannot write'."""
    _denied("s.json", "write_text")(run, monkeypatch)
    code, _, err = _invoke([str(run), "--steps", "0", "--json", str(tmp_path / "s.json")],
                           capsys)
    assert code == 2 and err == f"{PREFIX}cannot write {tmp_path / 's.json'}: Permission denied\n"


@pytest.mark.parametrize("damage", [b"\xff\xfe", b'{"kind": "ev', b"[1]\n3\n"],
                         ids=["undecodable", "torn", "not-objects"])
def test_resume_and_sample_skip_a_bad_metrics_line(damage, run, tmp_path, capsys):
    """read_metrics is shared: the trainer (a resume of the finished run, then one with more
    iters) and sample skip a line that is not a JSON object, as a torn line from a crash."""
    copy = Path(shutil.copytree(run, tmp_path / "run"))
    with open(copy / "metrics.jsonl", "ab") as f:
        f.write(damage)
    capsys.readouterr()
    assert cli.main(["train", "--resume", "--out", str(copy)]) == 0
    assert "already finished" in capsys.readouterr().err
    assert cli.main(["train", "--resume", "--iters", "5", "--out", str(copy)]) == 0
    rows = [json.loads(line) for line in (copy / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1] == {"kind": "finished", "step": 5}  # the bad line was dropped on rewrite
    assert cli.main(["sample", "--checkpoint", str(copy), "--tokens", "3"]) == 0
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("make", ["missing", "short"])
def test_summary_real_process_prints_one_line(make, run, tmp_path):
    """The README's two traces: a short run with the default steps, a folder that is missing."""
    folder = tmp_path / "nothing" if make == "missing" else run
    proc = subprocess.run([sys.executable, "-m", "minitorch.train.summary", str(folder),
                           "--plot", str(tmp_path / "x.png")], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == "", proc
    assert proc.stderr.startswith(PREFIX) and proc.stderr.count("\n") == 1, proc.stderr
    assert str(folder) in proc.stderr and not (tmp_path / "x.png").exists()


def test_summary_help_shows_real_defaults_only(capsys):
    """--plot/--json have no default to show (the shared cli HelpFormatter; argparse's printed
    '(default: None)'); --steps shows its own once."""
    code, out, _ = _invoke(["--help"], capsys)
    text = " ".join(out.split())
    assert code == 0 and "default: None" not in text, text
    assert text.count("(default: 0,1000,2000,3000,3999)") == 1, text
