"""Format version 1 checkpoints (arrays in an .npz), read so that runs saved before version 2
still resume and sample; the next save writes version 2 and removes the .npz.

Bounded like version 2: the file's size and streamed sha256 match the manifest, and every zip
entry's declared uncompressed size fits its manifest shape, before anything is decompressed
(zipfile never inflates past a declared size). Arrays load with allow_pickle=False.
"""

from __future__ import annotations

import hashlib
import math
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .manifest import CheckpointError

_NPY_HEADER_MAX = 1 << 16  # an .npy header is padded text: never near this


def read_npz_arrays(path: Path, m: dict[str, Any]) -> dict[str, np.ndarray]:
    """The arrays of a version-1 checkpoint's .npz, after its size, hash and zip entries match
    the (checked) manifest."""
    try:
        size = path.stat().st_size
        if size != m["nbytes"]:
            raise CheckpointError(f"checkpoint array file {path} is truncated or corrupted: "
                                  f"{size:,} bytes, the manifest says {m['nbytes']:,}")
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        if h.hexdigest() != m["sha256"]:
            raise CheckpointError(f"checkpoint array file {path} is corrupted: sha256 "
                                  f"{h.hexdigest()[:16]}... does not match the manifest's "
                                  f"{m['sha256'][:16]}...")
        with zipfile.ZipFile(path) as z:
            _check_entries(z, m, path)
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in m["shapes"]}
    except OSError as e:
        raise CheckpointError(f"checkpoint array file {path} cannot be read: "
                              f"{e.strerror or e}") from None
    except (ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as e:
        raise CheckpointError(f"checkpoint array file {path} is unreadable: {e}") from None
    got = {k: (list(v.shape), v.dtype.str) for k, v in arrays.items()}
    want = {k: (list(shape), dt) for k, (shape, dt) in m["shapes"].items()}
    if got != want:
        diff = sorted(k for k in want if got.get(k) != want[k])
        raise CheckpointError(f"checkpoint {path}: arrays disagree with the manifest: {diff}")
    return arrays


def _check_entries(z: zipfile.ZipFile, m: dict[str, Any], path: Path) -> None:
    """Entry names are the manifest's arrays; each declares the size its shape needs."""
    entries = {i.filename: i for i in z.infolist()}
    names = {f"{k}.npy" for k in m["shapes"]}
    if set(entries) != names:
        diff = sorted(set(entries) ^ names)
        raise CheckpointError(f"checkpoint array file {path}: arrays disagree with the manifest: "
                              f"{diff[:5]}")
    for k, (shape, dt) in m["shapes"].items():
        need = math.prod(shape) * np.dtype(dt).itemsize
        declared = entries[f"{k}.npy"].file_size
        if not need < declared <= need + _NPY_HEADER_MAX:
            raise CheckpointError(f"checkpoint array file {path}: array {k!r} declares "
                                  f"{declared:,} bytes uncompressed, but {shape} {dt} needs "
                                  f"{need:,} (+ its header)")
