"""Checkpoints that cannot execute code, are never half-written, and are read within bounds.

A checkpoint is two files in the run folder: ckpt-<step>-<hash>.safetensors (every array: weights
as model/<name>, optimizer moments as optim/<index>/<name>) and checkpoint.json, the manifest
(step, configs, tokenizer, RNG states, optimizer scalars, and the array file's sha256, size,
names, shapes and dtypes). Both are written atomically, the array file first; the manifest names
the latest checkpoint, so a crash at any point leaves the previous one intact.

Loading reads nothing it has not bounded: the manifest (size-capped) is checked field by field,
its model config against the parameter cap and its arrays against that config's parameter
count; the array file's header is compared with the manifest (names, dtypes, shapes, byte
offsets, file size, the step it was saved at) and its sha256 checked before its arrays are
parsed, and every array must be finite (save never writes NaN or inf). Any failure is a
CheckpointError: one line naming the file and what is wrong. A reader beside a trainer gets a whole
checkpoint, the old one or the new: the array file is read once, and read again under a newer
manifest if the trainer deleted it in between.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load as safetensors_arrays
from safetensors.numpy import save as safetensors_bytes

from . import atomic
from .manifest import (
    DTYPES,
    FORMAT,
    VERSION,
    CheckpointError,
    check_manifest,
    is_int,
    short_repr,
)

MANIFEST = "checkpoint.json"
MAX_MANIFEST_BYTES = 32 << 20  # a manifest is configs and scalars: a few MB even with BPE merges
MAX_HEADER_BYTES = 8 << 20  # a safetensors header lists names, shapes and offsets only
_READ_ATTEMPTS = 5  # manifests re-read while a trainer beside us replaces its checkpoint


@dataclass
class Checkpoint:
    """Everything a run needs to continue, as loaded from (or about to be saved to) disk."""

    step: int  # optimizer steps taken
    model: dict[str, np.ndarray]  # parameter name -> array
    optimizer: dict[str, Any]  # Optimizer.state_dict() form
    rng: dict[str, Any]  # named RNG states (numpy bit_generator dicts)
    config: dict[str, Any]  # TrainConfig.to_dict()
    model_config: dict[str, Any]  # the resolved GPTConfig as a dict
    tokenizer: dict[str, Any]  # tokenizer.to_dict()
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)  # JSON-safe run facts


def save_checkpoint(out_dir: str | Path, ckpt: Checkpoint) -> Path:
    """Write `ckpt` as out_dir's latest checkpoint, atomically; returns the manifest path.

    Raises:
        CheckpointError: an array that is not float16/32/64 or holds a NaN or inf (nothing is
            written then).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    arrays = {f"model/{k}": np.ascontiguousarray(v) for k, v in ckpt.model.items()}
    opt_scalars: dict[str, dict[str, Any]] = {}
    for i, st in ckpt.optimizer["state"].items():
        opt_scalars[str(i)] = {}
        for k, v in st.items():
            if isinstance(v, np.ndarray):
                arrays[f"optim/{i}/{k}"] = np.ascontiguousarray(v)
            else:
                opt_scalars[str(i)][k] = v.item() if isinstance(v, np.generic) else v
    bad = sorted(k for k, v in arrays.items() if v.dtype.str not in DTYPES)
    if bad:
        raise CheckpointError(f"cannot save arrays {bad[:3]}: checkpoints hold float16/32/64 only")
    bad = sorted(k for k, v in arrays.items() if not np.isfinite(v).all())
    if bad:  # the last line of defence: a diverged run never replaces a good checkpoint
        raise CheckpointError(f"refusing to save step {ckpt.step} in {out}: non-finite values in "
                              f"{bad[:3]}{' and more' if len(bad) > 3 else ''}")
    blob = safetensors_bytes(arrays, metadata={"format": FORMAT, "step": str(ckpt.step)})
    digest = hashlib.sha256(blob).hexdigest()
    array_name = f"ckpt-{ckpt.step:08d}-{digest[:12]}.safetensors"
    atomic.atomic_write(out / array_name, blob)
    manifest = {
        "format": FORMAT, "version": VERSION, "step": ckpt.step,
        "arrays": array_name, "sha256": digest, "nbytes": len(blob),
        "shapes": {k: [list(v.shape), v.dtype.str] for k, v in arrays.items()},
        "optimizer": {"param_groups": ckpt.optimizer["param_groups"], "state": opt_scalars},
        "rng": ckpt.rng, "config": ckpt.config, "model_config": ckpt.model_config,
        "tokenizer": ckpt.tokenizer, "extra": ckpt.extra,
    }
    atomic.atomic_write(out / MANIFEST, json.dumps(manifest, indent=1))
    atomic.fsync_dir(out)
    for old in out.glob("ckpt-*.safetensors"):
        if old.name != array_name:  # superseded array files, only once the manifest moved on
            old.unlink()
    for tmp in out.glob(".ckpt-*.tmp"):  # leftovers of a save that crashed
        tmp.unlink()
    atomic.sweep_temp_files(out, MANIFEST)
    return out / MANIFEST


def load_checkpoint(path: str | Path, max_params: int | None = None) -> Checkpoint:
    """The checkpoint in folder `path` (or at manifest `path`), fully validated.

    Args:
        path: a run folder holding checkpoint.json, or the manifest itself.
        max_params: parameter cap for its model config (default: limits.max_params()).
    Raises:
        CheckpointError: one line naming the file and the first thing wrong with it.
    """
    p = Path(path)
    manifest_path = p / MANIFEST if p.is_dir() or not p.suffix else p
    tried = None
    for _ in range(_READ_ATTEMPTS):
        m = _read_manifest(manifest_path, p)
        check_manifest(m, manifest_path, max_params)
        array_path = manifest_path.parent / Path(m["arrays"]).name  # never outside the folder
        try:
            arrays = _read_arrays(array_path, m)
            break
        except FileNotFoundError as e:  # a trainer saved a newer checkpoint, removed this one
            if array_path == tried:  # the manifest did not move on: the file is missing
                raise CheckpointError(f"checkpoint array file {array_path} cannot be read: "
                                      f"{e.strerror}") from None
            tried = array_path
    else:
        raise CheckpointError(f"checkpoint {manifest_path} was replaced {_READ_ATTEMPTS} times "
                              "while it was read; try again")
    model = {k[len("model/"):]: v for k, v in arrays.items() if k.startswith("model/")}
    state: dict[int, dict[str, Any]] = {int(i): dict(s) for i, s in m["optimizer"]["state"].items()}
    for k, v in arrays.items():
        if k.startswith("optim/"):
            _, i, name = k.split("/", 2)
            state.setdefault(int(i), {})[name] = v
    groups = [{k: (tuple(v) if isinstance(v, list) and k != "params" else v) for k, v in g.items()}
              for g in m["optimizer"]["param_groups"]]
    return Checkpoint(step=m["step"], model=model,
                      optimizer={"state": state, "param_groups": groups}, rng=m["rng"],
                      config=m["config"], model_config=m["model_config"],
                      tokenizer=m["tokenizer"], extra=m.get("extra", {}))


# -- reading, each step bounded ----------------------------------------------------------------


def _read_manifest(manifest_path: Path, given: Path) -> Any:
    try:
        with open(manifest_path, "rb") as f:
            raw = f.read(MAX_MANIFEST_BYTES + 1)
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint at {given}: {manifest_path.name} not found") from None
    except OSError as e:
        raise CheckpointError(f"checkpoint manifest {manifest_path} cannot be read: "
                              f"{e.strerror or e}") from None
    if len(raw) > MAX_MANIFEST_BYTES:
        raise CheckpointError(f"checkpoint manifest {manifest_path} is larger than "
                              f"{MAX_MANIFEST_BYTES >> 20} MB: not a manifest this library wrote")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointError(f"checkpoint manifest {manifest_path} is truncated or corrupted "
                              f"(not valid JSON: {e})") from None
    except RecursionError:
        raise CheckpointError(f"checkpoint manifest {manifest_path} is corrupted: JSON nested "
                              "too deeply to be a manifest") from None


def _read_arrays(path: Path, m: dict[str, Any]) -> dict[str, np.ndarray]:
    """The array file's arrays, read only after its header and hash match the manifest. The
    file is opened once (its header checked first, then read whole and hashed), so a trainer
    removing it meanwhile cannot split the read; FileNotFoundError if it is already gone."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            header, n, meta = _read_header(f, size, path)
            _check_header(header, m, size, 8 + n, path)
            _check_step(meta, m, path)
            f.seek(0)
            blob = f.read(size + 1)  # size: the manifest's nbytes, checked above
    except FileNotFoundError:
        raise
    except OSError as e:
        raise CheckpointError(f"checkpoint array file {path} cannot be read: "
                              f"{e.strerror or e}") from None
    digest = hashlib.sha256(blob).hexdigest()
    if digest != m["sha256"]:
        raise CheckpointError(
            f"checkpoint array file {path} is corrupted: sha256 {digest[:16]}... does "
            f"not match the manifest's {m['sha256'][:16]}...")
    try:
        arrays = safetensors_arrays(blob)
        del blob
        arrays = {k: arrays[k] if arrays[k].flags.writeable else np.array(arrays[k])
                  for k in m["shapes"]}
    except (SafetensorError, KeyError, ValueError) as e:
        raise CheckpointError(f"checkpoint array file {path} is unreadable: {e}") from None
    for k, a in arrays.items():  # save_checkpoint never writes one: a forged or damaged file
        if not np.isfinite(a).all():
            raise CheckpointError(f"checkpoint array file {path}: array {k!r} holds "
                                  f"{np.count_nonzero(~np.isfinite(a)):,} NaN or inf values")
    return arrays


def _check_step(meta: Any, m: dict[str, Any], path: Path) -> None:
    """The array file records the step it was saved at (its metadata and its name); both must
    be the manifest's, or the arrays belong to another step than the manifest claims."""
    step = meta.get("step") if isinstance(meta, dict) else None
    named = path.name.split("-")[1] if path.name.count("-") >= 2 else None
    if step != str(m["step"]) or named != f"{m['step']:08d}":
        raise CheckpointError(f"checkpoint array file {path} was saved at step {step} (its name "
                              f"says {named}), but the manifest says step {m['step']}")


def _read_header(f, size: int, path: Path) -> tuple[dict[str, Any], int, Any]:
    """The safetensors JSON header (8-byte little-endian length, then JSON), size-capped: its
    arrays, its length and its metadata."""
    lead = f.read(8)
    if len(lead) < 8:
        raise CheckpointError(f"checkpoint array file {path} is truncated: {size} bytes, "
                              "shorter than a safetensors header")
    (n,) = struct.unpack("<Q", lead)
    if n > min(MAX_HEADER_BYTES, size - 8):
        raise CheckpointError(f"checkpoint array file {path} is truncated or corrupted: its "
                              f"header claims {n:,} bytes in a {size:,}-byte file")
    try:
        header = json.loads(f.read(n))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CheckpointError(f"checkpoint array file {path} is corrupted: header is not "
                              f"valid JSON ({type(e).__name__})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"checkpoint array file {path} is corrupted: header is not an "
                              "object")
    return header, n, header.pop("__metadata__", None)


def _check_header(header: dict[str, Any], m: dict[str, Any], size: int, data_start: int,
                  path: Path) -> None:
    """Names, dtypes, shapes and byte ranges in the header must be exactly the manifest's."""
    if size != m["nbytes"]:
        raise CheckpointError(f"checkpoint array file {path} is truncated or corrupted: "
                              f"{size:,} bytes, the manifest says {m['nbytes']:,}")
    expected = {k: (list(shape), DTYPES[dt]) for k, (shape, dt) in m["shapes"].items()}
    names = set(header) | set(expected)
    diff = sorted(k for k in names if k not in header or k not in expected
                  or not isinstance(header[k], dict)
                  or (header[k].get("shape"), header[k].get("dtype")) != expected[k])
    if diff:
        raise CheckpointError(f"checkpoint array file {path}: arrays disagree with the manifest "
                              f"(names, shapes or dtypes): {short_repr(diff)}")
    spans = []
    for k, (shape, dt) in m["shapes"].items():
        off = header[k].get("data_offsets")
        want = math.prod(shape) * np.dtype(dt).itemsize
        if not (isinstance(off, list) and len(off) == 2 and all(is_int(o) for o in off)
                and off[1] - off[0] == want):
            raise CheckpointError(f"checkpoint array file {path}: array {k!r} has byte range "
                                  f"{short_repr(off)}, but {shape} {dt} needs {want:,} bytes")
        spans.append(off)
    end = 0
    for b, e in sorted(spans):
        if b != end:
            raise CheckpointError(f"checkpoint array file {path} is corrupted: array byte "
                                  f"ranges overlap or leave gaps at offset {b:,}")
        end = e
    if data_start + end != size:
        raise CheckpointError(f"checkpoint array file {path} is corrupted: header and arrays "
                              f"take {data_start + end:,} bytes of a {size:,}-byte file")
