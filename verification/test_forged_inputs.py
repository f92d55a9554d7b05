"""Forged or absurd inputs that once got through (issue 34): non-finite weights in a checkpoint,
arrays saved at another step than the manifest says, a lone surrogate in a char vocabulary, BPE
merge lists and chunks that blow up in time or memory, a minitorch.load structure naming one
array many times, devices and FIFOs as --data, and config values (eps, batch_size, eval_iters,
vocab_size) a run cannot use. Each is refused in one line naming what was wrong.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load as safetensors_arrays
from safetensors.numpy import save as safetensors_bytes

import minitorch as mt
from minitorch import cli
from minitorch.data import CharTokenizer, TokenizerError, bpe
from minitorch.io import CheckpointError
from minitorch.io.checkpoint import load_checkpoint
from minitorch.io.serialization import LoadError
from verification.test_cli_errors import TINY, assert_one_line, invoke

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("forged") / "run"
    assert cli.main(["train", *TINY, "--out", str(out)]) == 0
    return out


@pytest.fixture
def copy(run, tmp_path) -> Path:
    return Path(shutil.copytree(run, tmp_path / "run"))


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "checkpoint.json").read_text())


def rewrite_arrays(folder: Path, change=lambda arrays: None) -> dict:
    """Replace the checkpoint's array file with change(arrays), re-hashed and renamed as
    save_checkpoint would (so only the content itself is forged); its metadata is format and
    step only, as minitorch wrote it before array files kept their run's config. Returns the
    arrays written."""
    m = _manifest(folder)
    old = folder / m["arrays"]
    arrays = {k: np.array(v) for k, v in safetensors_arrays(old.read_bytes()).items()}
    change(arrays)
    blob = safetensors_bytes(arrays, metadata={"format": m["format"], "step": str(m["step"])})
    digest = hashlib.sha256(blob).hexdigest()
    name = f"ckpt-{m['step']:08d}-{digest[:12]}.safetensors"
    old.unlink()
    (folder / name).write_bytes(blob)
    m.update(arrays=name, sha256=digest, nbytes=len(blob))
    (folder / "checkpoint.json").write_text(json.dumps(m))
    return arrays


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_checkpoint_with_a_non_finite_weight_is_refused_naming_it(copy, value, capsys):
    def poison(arrays):
        arrays["model/lm_head.weight"][0, 0] = value

    rewrite_arrays(copy, poison)
    with pytest.raises(CheckpointError, match="'model/lm_head.weight' holds 1 NaN or inf"):
        load_checkpoint(copy)
    code, _, err = invoke(["sample", "--checkpoint", str(copy), "--tokens", "5"], capsys)
    assert_one_line(code, err, "sample", "model/lm_head.weight")


def test_manifest_step_must_be_the_step_of_its_array_file(copy, capsys):
    m = _manifest(copy)
    m["step"] += 5  # the arrays (and their sha256) unchanged: only the manifest lies
    (copy / "checkpoint.json").write_text(json.dumps(m))
    with pytest.raises(CheckpointError, match=f"saved at step {m['step'] - 5} .* manifest says "
                                              f"step {m['step']}"):
        load_checkpoint(copy)
    code, _, err = invoke(["sample", "--checkpoint", str(copy), "--tokens", "5"], capsys)
    assert_one_line(code, err, "sample", "saved at step")


def test_char_vocabulary_with_a_lone_surrogate_is_refused(copy, capsys):
    with pytest.raises(TokenizerError, match="lone surrogate U\\+D800"):
        CharTokenizer("ab\ud800")
    m = _manifest(copy)
    chars = m["tokenizer"]["chars"]
    m["tokenizer"]["chars"] = chars.replace(" ", "\udfff")  # same size: only the char is bad
    (copy / "checkpoint.json").write_text(json.dumps(m))
    code, _, err = invoke(["sample", "--checkpoint", str(copy), "--tokens", "5",
                           "--temperature", "0"], capsys)
    assert_one_line(code, err, "sample", "U+DFFF")


def test_bpe_merge_list_that_doubles_a_token_is_refused_before_it_is_built():
    """Merge i joins token 255 + i with itself: 24 merges would make a 16 MB token (40, the
    forged file of the issue, a TB); the lengths are checked before any bytes are joined."""
    merges = [[0, 0]] + [[256 + i, 256 + i] for i in range(23)]
    with pytest.raises(TokenizerError, match=r"merge 8 = \(263, 263\) makes a 512-byte token"):
        bpe.BPETokenizer.from_dict({"kind": "bpe", "merges": merges})
    with pytest.raises(TokenizerError, match="merges, more than"):
        bpe.BPETokenizer([(0, 0)] * (bpe.MAX_MERGES + 1))


def test_bpe_forged_merges_in_a_checkpoint_are_one_line(copy, capsys):
    m = _manifest(copy)
    m["tokenizer"] = {"kind": "bpe", "merges": [[0, 0]] + [[256 + i, 256 + i] for i in range(39)]}
    (copy / "checkpoint.json").write_text(json.dumps(m))
    code, _, err = invoke(["sample", "--checkpoint", str(copy), "--tokens", "5"], capsys)
    assert_one_line(code, err, "sample", "makes a")


def test_bpe_never_works_on_a_chunk_longer_than_max_chunk(monkeypatch):
    """A run of letters megabytes long once made training and encoding quadratic in its length:
    every chunk BPE merges within (training and encoding) is at most MAX_CHUNK bytes."""
    rng = np.random.default_rng(0)
    data = bytes(rng.integers(97, 100, size=20_000, dtype=np.uint8)) + b" " * 3000 + b"ab" * 900
    chunks = bpe.split_chunks(data)
    assert b"".join(chunks) == data and max(map(len, chunks)) == bpe.MAX_CHUNK
    longest = [0]
    merge = bpe._merge

    def spy(word, a, b, new):
        longest[0] = max(longest[0], len(word))
        return merge(word, a, b, new)

    monkeypatch.setattr(bpe, "_merge", spy)
    tok = bpe.BPETokenizer.train(data, 256 + 40)
    assert tok.decode_bytes(tok.encode_bytes(data)) == data
    assert 0 < longest[0] <= bpe.MAX_CHUNK
    assert all(len(v) <= bpe.MAX_CHUNK for v in tok.vocab)


def _archive(path: Path, structure: dict, arrays: dict[str, np.ndarray]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name, a in {**arrays, "structure.json": np.frombuffer(
                json.dumps(structure).encode(), np.uint8)}.items():
            buf = io.BytesIO()
            np.save(buf, a)
            z.writestr(f"{name}.npy", buf.getvalue())


def test_load_refuses_a_structure_naming_one_array_many_times(tmp_path):
    """A 4 MB file naming its one array 400 times would allocate 1.6 GB."""
    path = tmp_path / "many.pt"
    _archive(path, {"list": [{"array": 0}] * 400}, {"a0": np.zeros(1 << 19)})
    with pytest.raises(LoadError, match="entry a0 is named twice"):
        mt.load(path)
    _archive(path, {"list": [{"array": 0}, {"tensor": 1, "requires_grad": False}]},
             {"a0": np.zeros(3), "a1": np.ones(2)})  # each entry once: fine
    got = mt.load(path)
    assert got[0].tolist() == [0.0] * 3 and got[1].tolist() == [1.0, 1.0]


def _train_process(argv: list[str], tmp: Path) -> subprocess.CompletedProcess:
    """A real `minitorch train` with a deadline: a read that never ends fails the test."""
    return subprocess.run([sys.executable, "-m", "minitorch", "train", *TINY, "--out",
                           str(tmp / "out"), *argv], capture_output=True, text=True,
                          timeout=90)


def test_data_from_a_device_is_refused_not_read_forever(tmp_path):
    proc = _train_process(["--data", "/dev/zero"], tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "/dev/zero is not a regular file" in proc.stderr


def test_data_from_a_fifo_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    proc = _train_process(["--data", str(fifo)], tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "pipe is not a regular file" in proc.stderr


@pytest.mark.parametrize("argv, pattern", [
    (["--eps", "0"], "eps must be a finite number > 0"),
    (["--eps", "0.0"], "eps must be a finite number > 0"),
    (["--eval_iters", str(10**8)], "eval_iters 100,000,000 x batch_size 2"),
    (["--batch_size", str(10**9)], "batch_size 1,000,000,000 x block_size 16"),
    (["--tokenizer", "bpe", "--vocab_size", str(10**9)], "vocab_size must be <= 1,048,576"),
], ids=["eps-0", "eps-0.0", "eval_iters-1e8", "batch_size-1e9", "vocab_size-1e9"])
def test_absurd_config_values_are_one_line(argv, pattern, tmp_path, capsys):
    code, _, err = invoke(["train", *TINY, "--out", str(tmp_path / "out"), *argv], capsys)
    assert_one_line(code, err, "train", pattern)
    assert not (tmp_path / "out").exists()


def test_adam_itself_takes_eps_0_as_torch_does():
    """The refusal is the trainer's config (its runs would divide 0 by 0), not optim.Adam's."""
    p = mt.nn.Parameter(mt.zeros(3))
    opt = mt.optim.Adam([p], lr=0.1, eps=0.0)
    assert opt.param_groups[0]["eps"] == 0.0
