"""Checkpoints that cannot execute code, are never half-written, and are read within bounds.

A checkpoint is two files in the run folder: ckpt-<step>-<hash>.safetensors (every array: weights
as model/<name>, optimizer moments as optim/<index>/<name>) and checkpoint.json, the manifest
(step, configs, tokenizer, RNG states, optimizer scalars, and the array file's sha256, size,
names, shapes and dtypes). Both are written atomically, the array file first; the manifest names
the latest checkpoint, so a crash at any point leaves the previous one intact.

Loading reads nothing it has not bounded: the manifest (size-capped) is checked field by field,
its model config against the parameter cap and its arrays against that config's parameter
count; the array file's header is checked to describe the whole file, then compared with the
manifest (the run config and step it was saved with, names, dtypes, shapes, byte offsets, size)
and its sha256 checked before its arrays are parsed, and every array must be finite (save never
writes NaN or inf). Any failure is a CheckpointError: one line naming the file and what is wrong;
an intact array file of another run or step says so, "truncated"/"corrupted" means damaged bytes.
A reader beside a trainer gets a whole checkpoint, the old one or the new: the array file is read
once, and read again under a newer manifest if the trainer deleted it in between.
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
    # the run config and step travel with the arrays: a file of another run is named as such
    meta = {"format": FORMAT, "step": str(ckpt.step),
            "config": json.dumps(ckpt.config, sort_keys=True)}
    blob = safetensors_bytes(arrays, metadata=meta)
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
                                      f"{e.strerror}{_others(array_path)}") from None
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


def _others(missing: Path) -> str:
    """What a folder holds instead of the array file its manifest names (a manifest copied in
    from another run names that run's file)."""
    names = sorted(p.name for p in missing.parent.glob("ckpt-*.safetensors"))
    if not names:
        return ""
    return (f"; the folder holds {', '.join(names[:2])}{' and more' if len(names) > 2 else ''}"
            f" instead, so {MANIFEST} may belong to another run")


def config_diff(a: dict[str, Any], b: dict[str, Any], most: int = 3) -> tuple[str, str] | None:
    """The keys two run configs differ in, as ("seed=7, model.n_embd=32", "seed=1337, ...")
    (a dict value, such as model, by dotted key; at most `most` keys), or None if equal."""
    def flat(d: dict[str, Any]) -> dict[str, Any]:  # one level: no recursion on forged depth
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update({f"{k}.{kk}": vv for kk, vv in v.items()} if isinstance(v, dict)
                       else {k: v})
        return out

    fa, fb = flat(a), flat(b)
    keys = sorted(k for k in fa.keys() | fb.keys() if fa.get(k, _UNSET) != fb.get(k, _UNSET))
    if not keys:
        return None
    more = f" and {len(keys) - most} more" if len(keys) > most else ""

    def show(d: dict[str, Any]) -> str:
        return ", ".join(f"{k} unset" if k not in d else f"{k}={short_repr(d[k])}"
                         for k in keys[:most]) + more

    return show(fa), show(fb)


_UNSET = object()


def _read_arrays(path: Path, m: dict[str, Any]) -> dict[str, np.ndarray]:
    """The array file's arrays, read only after its header and hash match the manifest. The
    file is opened once (its header checked first, then read whole and hashed), so a trainer
    removing it meanwhile cannot split the read; FileNotFoundError if it is already gone."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            header, n, meta = _read_header(f, size, path)
            _check_whole(header, size, 8 + n, path, m)
            _check_same_checkpoint(header, meta, m, path)
            _check_header(header, m, size, path)
            f.seek(0)
            blob = f.read(size + 1)  # size: the manifest's nbytes, checked above
    except FileNotFoundError:
        raise
    except OSError as e:
        raise CheckpointError(f"checkpoint array file {path} cannot be read: "
                              f"{e.strerror or e}") from None
    digest = hashlib.sha256(blob).hexdigest()
    if digest != m["sha256"]:
        named = path.stem.rsplit("-", 1)[-1]  # save names the file after its sha256
        if len(named) == 12 and digest.startswith(named):
            raise CheckpointError(
                f"checkpoint array file {path} belongs to another run than its manifest: its "
                f"sha256 {digest[:16]}... is the one its name records, not the manifest's "
                f"{m['sha256'][:16]}... (the same step and array shapes, other values)")
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


def _check_whole(header: dict[str, Any], size: int, data_start: int, path: Path,
                 m: dict[str, Any]) -> None:
    """The header's byte ranges tile the file exactly, whatever the manifest says: a shorter
    file is truncated, a longer or ill-tiled one corrupted (another run's file passes)."""
    spans = []
    for k, v in header.items():
        off = v.get("data_offsets") if isinstance(v, dict) else None
        if not (isinstance(off, list) and len(off) == 2 and all(is_int(o) for o in off)
                and 0 <= off[0] <= off[1]):
            raise CheckpointError(f"checkpoint array file {path} is corrupted: array {k!r} has "
                                  f"byte range {short_repr(off)}")
        spans.append(off)
    end = 0
    for b, e in sorted(spans):
        if b != end:
            raise CheckpointError(f"checkpoint array file {path} is corrupted: array byte "
                                  f"ranges overlap or leave gaps at offset {b:,}")
        end = e
    if data_start + end > size:
        raise CheckpointError(f"checkpoint array file {path} is truncated: {size:,} bytes, its "
                              f"header needs {data_start + end:,} (the manifest says "
                              f"{m['nbytes']:,})")
    if data_start + end != size:
        raise CheckpointError(f"checkpoint array file {path} is corrupted: header and arrays "
                              f"take {data_start + end:,} bytes of a {size:,}-byte file")


def _check_same_checkpoint(header: dict[str, Any], meta: Any, m: dict[str, Any],
                           path: Path) -> None:
    """A whole array file must be the manifest's: the run config and step it was saved with
    (its metadata; the step also in its name), its names, shapes and dtypes. A file saved by
    another run, or at another step, is refused saying so and what differs."""
    meta = meta if isinstance(meta, dict) else {}
    diffs, other_run = [], False
    saved = _saved_config(meta)
    d = config_diff(saved, m["config"]) if saved is not None else None
    if d:
        diffs.append(f"it was saved by a run with {d[0]} where the manifest's run has {d[1]}")
        other_run = True
    expected = {k: (list(shape), DTYPES[dt]) for k, (shape, dt) in m["shapes"].items()}
    got = {k: (v.get("shape"), v.get("dtype")) for k, v in header.items()}
    wrong = sorted(k for k in got.keys() | expected.keys() if got.get(k) != expected.get(k))
    if wrong:
        shown = [f"{k} {_spec(got.get(k))} (the manifest: {_spec(expected.get(k))})"
                 for k in wrong[:2]]
        more = f" and {len(wrong) - 2} more" if len(wrong) > 2 else ""
        diffs.append("its arrays disagree with the manifest (names, shapes or dtypes): "
                     + ", ".join(shown) + more)
        other_run = True
    step = meta.get("step")
    named = path.name.split("-")[1] if path.name.count("-") >= 2 else None
    if step != str(m["step"]) or named != f"{m['step']:08d}":
        as_named = isinstance(step, str) and step.isdigit() and named == f"{int(step):08d}"
        saved_at = "its header records no step" if step is None else f"it was saved at step {step}"
        diffs.append(f"{saved_at} "
                     f"({'as its name says' if as_named else f'its name says {named}'}), "
                     f"the manifest says step {m['step']}")
    if not diffs:
        return
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint array file {path} was not saved by minitorch (its "
                              f"header has no checkpoint metadata): {diffs[0]}")
    raise CheckpointError(f"checkpoint array file {path} belongs to another "
                          f"{'run' if other_run else 'checkpoint'} than its manifest: "
                          + "; ".join(diffs))


def _saved_config(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The run config an array file was saved with (None for files saved before it was kept)."""
    try:
        cfg = json.loads(meta["config"])
    except (KeyError, TypeError, ValueError, RecursionError):
        return None
    return cfg if isinstance(cfg, dict) else None


def _spec(entry: Any) -> str:
    """[shape, dtype] of one array as an error shows it ("absent" when there is none)."""
    if entry is None:
        return "absent"
    shape, dtype = entry
    return f"{short_repr(shape)} {dtype[:8]}" if isinstance(dtype, str) else short_repr(entry)


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


def _check_header(header: dict[str, Any], m: dict[str, Any], size: int, path: Path) -> None:
    """The file's size and every array's byte range must be the manifest's (its names, shapes,
    dtypes and tiling are checked already)."""
    if size != m["nbytes"]:
        raise CheckpointError(f"checkpoint array file {path} is whole ({size:,} bytes, as its "
                              f"header says), but the manifest says {m['nbytes']:,}: the two "
                              "are of different checkpoints")
    for k, (shape, dt) in m["shapes"].items():
        off = header[k]["data_offsets"]
        want = math.prod(shape) * np.dtype(dt).itemsize
        if off[1] - off[0] != want:
            raise CheckpointError(f"checkpoint array file {path}: array {k!r} has byte range "
                                  f"{short_repr(off)}, but {shape} {dt} needs {want:,} bytes")
