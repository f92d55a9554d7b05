"""A refused `minitorch train` leaves the file system as it found it: a run folder (and its
parents) that the refused run created is removed, lock and token files included; a folder that
existed before keeps exactly what it held; a folder holding a run's files is never touched."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from minitorch import cli
from minitorch.data import DataError
from minitorch.train import Trainer, resolve
from minitorch.train.run_dir import LOCK

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--iters", "2", "--eval_interval", "1", "--eval_iters", "1", "--batch_size", "2",
        "--n_layer", "1", "--n_embd", "16", "--n_hidden", "32", "--block_size", "16",
        "--sample_tokens", "4", "--plot", "False", "--no-tune-allocator"]
DATA = {"latin1.txt": "caf\u00e9 cr\u00e8me br\u00fbl\u00e9e ".encode("latin-1") * 40,
        "short.txt": b"hello world, but short"}
# (id, extra argv with {data} = the folder of DATA, words of the error)
REFUSALS = [
    ("data-missing", ["--data", "{data}/nonexistent.txt"], "not found"),
    ("data-not-utf8", ["--data", "{data}/latin1.txt"], "UTF-8"),
    ("data-too-short", ["--data", "{data}/short.txt"], "too short"),
    ("over-param-limit", ["--n_embd", "4000", "--n_layer", "10"], "parameters"),
]


@pytest.fixture
def data(tmp_path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    for name, blob in DATA.items():
        (folder / name).write_bytes(blob)
    return folder


def _refused(extra: list[str], data: Path, out: Path, capsys, words: str) -> None:
    capsys.readouterr()
    argv = ["train", *TINY, *[a.replace("{data}", str(data)) for a in extra], "--out", str(out)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("minitorch train: error: ") and err.count("\n") == 1, err
    assert words in err, err


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every entry under folder -> its bytes (None for a folder)."""
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
            for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("case_id, extra, words", REFUSALS, ids=[c[0] for c in REFUSALS])
def test_refused_train_removes_the_folders_it_created(case_id, extra, words, data, tmp_path,
                                                      capsys):
    out = tmp_path / "runs" / "x"  # runs/ does not exist either
    _refused(extra, data, out, capsys, words)
    assert not (tmp_path / "runs").exists(), _tree(tmp_path / "runs")


@pytest.mark.parametrize("case_id, extra, words", REFUSALS, ids=[c[0] for c in REFUSALS])
def test_refused_train_leaves_an_existing_folder_as_it_was(case_id, extra, words, data, tmp_path,
                                                           capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    _refused(extra, data, empty, capsys, words)
    assert empty.is_dir() and _tree(empty) == {}
    # a folder with the user's own files and an old lock file
    kept = tmp_path / "kept"
    (kept / "notes").mkdir(parents=True)
    (kept / "notes" / "plan.txt").write_text("mine")
    (kept / LOCK).write_text("4242\n")
    before = _tree(kept)
    _refused(extra, data, kept, capsys, words)
    after = _tree(kept)
    assert after.pop(LOCK) is not None and after == {k: v for k, v in before.items() if k != LOCK}


def test_refusal_keeps_a_folder_holding_a_run(data, tmp_path, capsys):
    """Removal is for folders the refused run made: a finished run's folder, refused again
    (with data too short for the run, --overwrite), keeps every file, its checkpoint and its
    token file included (the other corpora's token files go only once the new one passes)."""
    out = tmp_path / "runs" / "x"
    assert cli.main(["train", *TINY, "--out", str(out)]) == 0
    before = {k: v for k, v in _tree(out).items() if k != LOCK}
    _refused(["--overwrite", "--data", "{data}/short.txt"], data, out, capsys, "too short")
    after = {k: v for k, v in _tree(out).items() if k != LOCK}
    assert "checkpoint.json" in after and any(k.startswith("tokens-") for k in after)
    assert after == before


def test_refused_trainer_in_the_library_leaves_no_folder(data, tmp_path):
    """Trainer(cfg) without the CLI: a corpus too short for the run leaves no folder either."""
    out = tmp_path / "runs" / "lib"
    cfg = resolve(None, {"iters": 2, "batch_size": 2, "eval_iters": 1, "block_size": 16,
                         "data": str(data / "short.txt"), "out_dir": str(out),
                         "model": {"n_layer": 1, "n_embd": 16, "n_hidden": 32}})
    with pytest.raises(DataError, match="too short"):
        Trainer(cfg, stream=io.StringIO())
    assert not (tmp_path / "runs").exists()


def test_refused_train_real_process(tmp_path):
    """The walkthrough's command: `minitorch train --data /nonexistent.txt --out runs/x`."""
    proc = subprocess.run([sys.executable, "-m", "minitorch", "train", "--data",
                           str(tmp_path / "nonexistent.txt"), "--out", "runs/x"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "runs").exists()


def test_a_run_that_fails_after_writing_keeps_its_new_folder(tmp_path, capsys, monkeypatch):
    """A folder the run created but has written its checkpoint into is never removed, whatever
    ends the run (here a user error raised as the run finishes)."""
    from minitorch.train import ConfigError

    def fail(self):
        raise ConfigError("planted failure after the last checkpoint")

    monkeypatch.setattr("minitorch.train.loop.Trainer._finish", fail)
    out = tmp_path / "runs" / "x"
    assert cli.main(["train", *TINY, "--out", str(out)]) == 2
    assert "planted failure" in capsys.readouterr().err
    assert {"checkpoint.json", "config.json", "metrics.jsonl", "checkpoints"} <= {
        p.name for p in out.iterdir()}
