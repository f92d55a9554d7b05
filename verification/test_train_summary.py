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

ROOT = Path(__file__).resolve().parent.parent
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
    capsys.readouterr()
    try:
        code = summary.main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


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


def _not_json(folder: Path) -> None:
    (folder / "config.json").write_text("{oops")


def _no_evals(folder: Path) -> None:
    (folder / "metrics.jsonl").write_text('{"kind": "step", "step": 0, "loss": 4.0}\n')


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
    ("config-a-list", ["{run}"], lambda f: (f / "config.json").write_text("[1]"),
     ["{run}: ", "config.json has no 'train' config"]),
    ("no-metrics", ["{run}"], lambda f: (f / "metrics.jsonl").unlink(),
     ["{run}: no evaluation rows"]),
    ("no-eval-rows", ["{run}"], _no_evals, ["{run}: no evaluation rows"]),
    ("second-run-missing", ["{run}", "{tmp}/gone", "--steps", "0"], None,
     ["{tmp}/gone: no such run folder"]),
    ("steps-not-numbers", ["{run}", "--steps", "0,last"], None, ["--steps '0,last'"]),
    ("plot-folder-missing", ["{run}", "--steps", "0", "--plot", "{tmp}/no/x.png"], None,
     ["--plot", "does not exist"]),
    ("json-is-a-folder", ["{run}", "--steps", "0", "--json", "{tmp}"], None,
     ["--json", "is a folder"]),
    ("no-runs", [], None, ["the following arguments are required: runs"]),
    ("unknown-flag", ["{run}", "--step", "0"], None, ["unrecognized arguments"]),
]


@pytest.mark.parametrize("case_id, argv, prep, words", CASES, ids=[c[0] for c in CASES])
def test_summary_bad_input_is_one_line_exit_2(case_id, argv, prep, words, run, tmp_path,
                                              capsys):
    copy = Path(shutil.copytree(run, tmp_path / "run"))
    if prep is not None:
        prep(copy)
    (tmp_path / "case").mkdir()
    fill = lambda s: s.replace("{run}", str(copy)).replace("{tmp}", str(tmp_path / "case"))  # noqa: E731
    code, out, err = _invoke([fill(a) for a in argv], capsys)
    assert code == 2, (out, err)
    assert err.startswith(PREFIX) and err.count("\n") == 1 and "Traceback" not in err, err
    for w in words:
        assert fill(w) in err, (fill(w), err)
    assert out == ""  # nothing printed before the error: every run is checked first


@pytest.mark.parametrize("make", ["missing", "short"])
def test_summary_real_process_prints_one_line(make, run, tmp_path):
    """The README's two traces: a short run with the default steps, a folder that is missing."""
    folder = tmp_path / "nothing" if make == "missing" else run
    proc = subprocess.run([sys.executable, "-m", "minitorch.train.summary", str(folder),
                           "--plot", str(tmp_path / "x.png")], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 2 and proc.stdout == "", proc
    assert proc.stderr.startswith(PREFIX) and proc.stderr.count("\n") == 1, proc.stderr
    assert str(folder) in proc.stderr and not (tmp_path / "x.png").exists()
