"""The kept checkpoint history, <run>/checkpoints/step-N/: byte copies of the run's checkpoint.

A copy is complete once its manifest is in place (written last, atomically, after its array
file); only complete copies count toward --keep_last, a partial one is removed, and a copy a kill
left missing or partial is made again on resume (loop.Trainer). Rank 0 alone calls these.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

from ..io import atomic
from ..io.checkpoint import MANIFEST

HISTORY = "checkpoints"  # <run>/checkpoints/step-XXXXXXXX/ and <run>/checkpoints/best/


def step_dir(out: Path, step: int) -> Path:
    return out / HISTORY / f"step-{step:08d}"


def _manifest(folder: Path) -> dict | None:
    try:
        m = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return m if isinstance(m, dict) else None


def is_complete(folder: Path) -> bool:
    """True if folder holds a manifest and the array file it names, of the size it says (the
    content itself is checked by load_checkpoint)."""
    m = _manifest(folder)
    if m is None or not isinstance(m.get("arrays"), str):
        return False
    arrays = folder / Path(m["arrays"]).name
    return arrays.is_file() and arrays.stat().st_size == m.get("nbytes")


def copy_latest(out: Path, dst: Path) -> None:
    """Copy out's checkpoint (array file, then manifest) into dst, each file atomically."""
    m = _manifest(out)
    if m is None:
        raise FileNotFoundError(f"no checkpoint manifest in {out} to copy into {dst}")
    dst.mkdir(parents=True, exist_ok=True)
    name = Path(m["arrays"]).name
    for fname in (name, MANIFEST):  # the manifest last: it marks the copy complete
        with open(out / fname, "rb") as src, atomic.atomic_writer(dst / fname) as f:
            shutil.copyfileobj(src, f, 1 << 20)
    atomic.fsync_dir(dst)
    for old in dst.glob("ckpt-*.safetensors"):  # a different copy's arrays left by a kill
        if old.name != name:
            old.unlink()
    atomic.sweep_temp_files(dst, MANIFEST)
    atomic.sweep_temp_files(dst, name)


def prune(out: Path, keep_last: int) -> None:
    """Remove partial copies, then all but the newest keep_last complete ones."""
    folders = sorted(p for p in (out / HISTORY).glob("step-*") if p.is_dir())
    complete = [p for p in folders if is_complete(p)]
    for old in [p for p in folders if p not in complete] + complete[:-keep_last]:
        with contextlib.suppress(FileNotFoundError):
            (old / MANIFEST).unlink()  # first: a kill inside rmtree leaves it visibly partial
        shutil.rmtree(old, ignore_errors=True)


def keep(out: Path, step: int, keep_last: int, missing_only: bool = False) -> None:
    """Copy out's checkpoint (at `step`) to checkpoints/step-N/ (with missing_only: only if
    that copy is missing or partial, as a resume does), then prune to keep_last copies."""
    dst = step_dir(out, step)
    if not (missing_only and is_complete(dst)):
        copy_latest(out, dst)
    prune(out, keep_last)
