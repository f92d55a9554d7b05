"""A checkpoint file of another run is named as such (issue 36), not as "truncated or corrupted":
an array file copied over or pointed at from a run of another seed or config, or from another
step of the same run, a manifest copied in from another run folder, `--resume` of a folder
whose checkpoint came from another run. Each error is one line naming the file and what
differs; damaged bytes are still called truncated or corrupted, and a run folder moved or
copied whole still resumes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load as safetensors_arrays
from safetensors.numpy import save as safetensors_bytes

from minitorch import cli
from minitorch.io import CheckpointError, load_checkpoint, save_checkpoint
from minitorch.train import read_metrics
from verification.test_cli_errors import TINY, arrays_file, assert_one_line, invoke
from verification.test_forged_inputs import rewrite_arrays

MANIFEST = "checkpoint.json"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Three tiny finished runs: A (seed 1337, a checkpoint every step: checkpoints/step-1),
    B (seed 7, the default ckpt_interval), C (n_embd 32); the tests work on copies."""
    root = tmp_path_factory.mktemp("runs")
    flags = {"A": ["--ckpt_interval", "1"], "B": ["--seed", "7"], "C": ["--n_embd", "32"]}
    for name, extra in flags.items():
        assert cli.main(["train", *TINY, *extra, "--out", str(root / name)]) == 0
    return {name: root / name for name in flags}


def _copy(src: Path, tmp_path: Path, name: str = "X") -> Path:
    return Path(shutil.copytree(src, tmp_path / name))


def _manifest(folder: Path) -> dict:
    return json.loads((folder / MANIFEST).read_text())


def _point_at(folder: Path, name: str) -> None:
    """The manifest names `name` as its array file (nothing else in it changes)."""
    m = _manifest(folder)
    m["arrays"] = name
    (folder / MANIFEST).write_text(json.dumps(m))


def _refused(folder: Path) -> str:
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(folder)
    return str(e.value)


def _bring(src: Path, folder: Path, how: str) -> Path:
    """Array file `src` copied into `folder` over its own (`overwritten`) or beside it with the
    manifest pointed at it (`pointed`); returns the path the manifest now names."""
    if how == "overwritten":
        target = arrays_file(folder)
    else:
        target = folder / src.name
        _point_at(folder, src.name)
    shutil.copyfile(src, target)
    return target


@pytest.mark.parametrize("how", ["overwritten", "pointed"])
def test_array_file_of_a_run_with_another_seed_is_named(runs, tmp_path, how, capsys):
    x = _copy(runs["B"], tmp_path)
    path = _bring(arrays_file(runs["A"]), x, how)
    want = (f"checkpoint array file {path} belongs to another run than its manifest: it was "
            f"saved by a run with ckpt_interval=1, out_dir={str(runs['A'])!r}, seed=1337 where "
            f"the manifest's run has ckpt_interval=1000, out_dir={str(runs['B'])!r}, seed=7")
    assert _refused(x) == want
    code, _, err = invoke(["sample", "--checkpoint", str(x), "--tokens", "3"], capsys)
    assert_one_line(code, err, "sample")
    assert err == f"minitorch sample: error: {want}\n"


def _shape_diff(have: dict, manifest: dict) -> str:
    """The arrays part of the message, from the two runs' manifests: the first two names whose
    [shape, dtype] differ, and how many more."""
    wrong = sorted(k for k in have.keys() | manifest.keys() if have.get(k) != manifest.get(k))
    shown = [f"{k} {have[k][0]} F32 (the manifest: {manifest[k][0]} F32)" for k in wrong[:2]]
    return ("its arrays disagree with the manifest (names, shapes or dtypes): "
            + ", ".join(shown) + f" and {len(wrong) - 2} more")


def test_array_file_of_a_run_with_another_config_is_named(runs, tmp_path, capsys):
    """C's arrays (n_embd 32) in B's folder: other config, other shapes; not "truncated"."""
    x = _copy(runs["B"], tmp_path)
    path = _bring(arrays_file(runs["C"]), x, "overwritten")
    want = (f"checkpoint array file {path} belongs to another run than its manifest: it was "
            f"saved by a run with model.n_embd=32, out_dir={str(runs['C'])!r}, seed=1337 where "
            f"the manifest's run has model.n_embd=16, out_dir={str(runs['B'])!r}, seed=7; "
            + _shape_diff(_manifest(runs["C"])["shapes"], _manifest(runs["B"])["shapes"]))
    assert _refused(x) == want
    code, _, err = invoke(["trace", "--checkpoint", str(x), "--text", "The ferry"], capsys)
    assert err == f"minitorch trace: error: {want}\n" and code == 2


def test_folder_with_the_manifest_of_another_config_is_named(runs, tmp_path, capsys):
    """`sample --checkpoint` on a folder holding C's manifest (n_embd 32) beside B's arrays
    under the name C's manifest gives them."""
    x = _copy(runs["B"], tmp_path)
    own = arrays_file(x)
    shutil.copyfile(runs["C"] / MANIFEST, x / MANIFEST)
    own.rename(arrays_file(x))
    want = (f"checkpoint array file {arrays_file(x)} belongs to another run than its manifest: "
            f"it was saved by a run with model.n_embd=16, out_dir={str(runs['B'])!r}, seed=7 "
            f"where the manifest's run has model.n_embd=32, out_dir={str(runs['C'])!r}, "
            "seed=1337; "
            + _shape_diff(_manifest(runs["B"])["shapes"], _manifest(runs["C"])["shapes"]))
    code, _, err = invoke(["sample", "--checkpoint", str(x), "--tokens", "3"], capsys)
    assert_one_line(code, err, "sample")
    assert err == f"minitorch sample: error: {want}\n"


@pytest.mark.parametrize("how, name_says", [("overwritten", "its name says 00000002"),
                                            ("pointed", "as its name says")])
def test_array_file_of_another_step_of_the_same_run_is_named(runs, tmp_path, how, name_says):
    """A's step-1 copy (checkpoints/step-00000001) where its step-2 arrays belong: the same
    run, so only the step differs."""
    x = _copy(runs["A"], tmp_path)
    (old,) = (runs["A"] / "checkpoints" / "step-00000001").glob("ckpt-*.safetensors")
    path = _bring(old, x, how)
    assert _refused(x) == (f"checkpoint array file {path} belongs to another checkpoint than "
                           f"its manifest: it was saved at step 1 ({name_says}), the manifest "
                           "says step 2")


def test_same_step_and_shapes_with_other_values_is_named_by_its_hash(runs, tmp_path):
    """Arrays of the same config, step and shapes but other values, saved (so named after their
    sha256) in another folder: the hash its name records tells it from a damaged file."""
    x = _copy(runs["A"], tmp_path)
    ck = load_checkpoint(runs["A"])
    ck.model["wte.weight"] = ck.model["wte.weight"] + np.float32(0.5)
    other = tmp_path / "other"
    save_checkpoint(other, ck)
    m = _manifest(x)
    (src,) = other.glob("ckpt-*.safetensors")
    path = _bring(src, x, "pointed")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert path.stat().st_size == m["nbytes"]  # only the hash can tell
    assert _refused(x) == (f"checkpoint array file {path} belongs to another run than its "
                           f"manifest: its sha256 {digest[:16]}... is the one its name records, "
                           f"not the manifest's {m['sha256'][:16]}... (the same step and array "
                           "shapes, other values)")


def test_damaged_bytes_are_still_corrupted_or_truncated(runs, tmp_path):
    """The contrast: A's own file with one data byte flipped, or cut short, is damage."""
    x = _copy(runs["A"], tmp_path)
    path, m = arrays_file(x), _manifest(x)
    blob = bytearray(path.read_bytes())
    blob[-100] ^= 0xFF
    path.write_bytes(bytes(blob))
    digest = hashlib.sha256(bytes(blob)).hexdigest()
    assert _refused(x) == (f"checkpoint array file {path} is corrupted: sha256 {digest[:16]}... "
                           f"does not match the manifest's {m['sha256'][:16]}...")
    path.write_bytes(bytes(blob[: len(blob) // 2]))
    assert _refused(x) == (f"checkpoint array file {path} is truncated: {len(blob) // 2:,} "
                           f"bytes, its header needs {m['nbytes']:,} (the manifest says "
                           f"{m['nbytes']:,})")


def test_manifest_copied_from_another_run_names_the_file_the_folder_holds(runs, tmp_path):
    x = _copy(runs["B"], tmp_path)
    own = arrays_file(x)
    shutil.copyfile(runs["A"] / MANIFEST, x / MANIFEST)
    assert _refused(x) == (f"checkpoint array file {x / arrays_file(runs['A']).name} cannot be "
                           f"read: No such file or directory; the folder holds {own.name} "
                           "instead, so checkpoint.json may belong to another run")


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def test_resume_of_a_checkpoint_copied_in_from_another_run_is_refused(runs, tmp_path, capsys):
    """A's checkpoint (manifest and arrays, consistent) in B's folder: it loads, but B's
    config.json says the folder's run has seed 7; resuming would continue A's run over B's
    metrics and history. Refused in one line, nothing changed (ckpt_interval, which a resume
    may change, is not named)."""
    x = _copy(runs["B"], tmp_path)
    arrays_file(x).unlink()
    shutil.copyfile(runs["A"] / MANIFEST, x / MANIFEST)
    shutil.copyfile(arrays_file(runs["A"]), arrays_file(x))
    load_checkpoint(x)  # the checkpoint itself is whole
    before = _tree(x)
    code, _, err = invoke(["train", "--resume", "--out", str(x), "--iters", "3",
                           "--no-tune-allocator"], capsys)
    assert_one_line(code, err, "train")
    assert err == (f"minitorch train: error: checkpoint {x / MANIFEST} belongs to another run "
                   f"than {x}: it was saved by a run with seed=1337 where {x / 'config.json'} "
                   "(written when this folder's run started) has seed=7; resume the folder it "
                   "came from, or copy that whole folder\n")
    assert _tree(x) == before


def test_run_folder_moved_or_copied_whole_still_resumes(runs, tmp_path, capsys):
    """No false alarm: the copy's files all name the old out_dir, a resume may change --iters,
    and a config.json an older minitorch wrote lacks keys added since; it continues at step 2."""
    x = _copy(runs["B"], tmp_path, "moved")
    started = json.loads((x / "config.json").read_text())
    del started["train"]["grad_clip"]
    (x / "config.json").write_text(json.dumps(started))
    code, _, err = invoke(["train", "--resume", "--out", str(x), "--iters", "3",
                           "--no-tune-allocator"], capsys)
    assert code == 0, err
    assert f"resuming {x} at step 2/3" in err
    assert [r["step"] for r in read_metrics(x) if r["kind"] == "step"] == [0, 1, 2]


def test_array_file_saved_before_the_config_was_kept_still_loads(runs, tmp_path):
    """An array file whose metadata has only format and step (minitorch before issue 36)."""
    x = _copy(runs["A"], tmp_path)
    arrays = rewrite_arrays(x)
    ck = load_checkpoint(x)
    assert all(np.array_equal(ck.model[k], arrays[f"model/{k}"]) for k in ck.model)


def test_array_file_without_minitorch_metadata_says_it_records_no_step(runs, tmp_path):
    """A's own arrays re-saved by another safetensors writer (no metadata in its header): no
    step is recorded, said so (not 'saved at step None')."""
    x = _copy(runs["A"], tmp_path)
    path = arrays_file(x)
    path.write_bytes(safetensors_bytes(safetensors_arrays(path.read_bytes())))
    err = _refused(x)
    assert err == (f"checkpoint array file {path} was not saved by minitorch (its header has no "
                   "checkpoint metadata): its header records no step (its name says "
                   "00000002), the manifest says step 2"), err
