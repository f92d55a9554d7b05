"""Checkpoints that cannot execute code and are never half-written.

A checkpoint is two files in the run folder: ckpt-<step>-<hash>.npz (every array: weights and
optimizer moments; read with allow_pickle=False) and checkpoint.json, the manifest (step, config,
tokenizer, RNG states, optimizer scalars, and the npz's sha256). Both are written to a temp file,
fsynced and os.replace()d, the array file first; the manifest names the "latest" checkpoint, so
a crash at any point leaves the previous one intact. Loading checks the manifest's structure
(each field's type), the hash, and the arrays' names, shapes and dtypes before anything uses the
data; a bad checkpoint raises CheckpointError naming what is wrong.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MANIFEST = "checkpoint.json"
FORMAT = "minitorch-checkpoint"
VERSION = 1
REQUIRED = ("format", "version", "step", "arrays", "sha256", "shapes", "optimizer", "rng",
            "config", "model_config", "tokenizer")  # manifest fields ("extra" is optional)
_ARRAY_NAME = re.compile(r"model/.+|optim/[0-9]+/.+")  # the names save_checkpoint gives arrays


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, truncated, corrupted or of an unknown format."""


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
    """Write `ckpt` as out_dir's latest checkpoint, atomically; returns the manifest path."""
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
                opt_scalars[str(i)][k] = v
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    blob = buf.getvalue()
    digest = hashlib.sha256(blob).hexdigest()
    npz_name = f"ckpt-{ckpt.step:08d}-{digest[:12]}.npz"
    _atomic_write(out / npz_name, blob)
    manifest = {
        "format": FORMAT, "version": VERSION, "step": ckpt.step,
        "arrays": npz_name, "sha256": digest, "nbytes": len(blob),
        "shapes": {k: [list(v.shape), v.dtype.str] for k, v in arrays.items()},
        "optimizer": {"param_groups": ckpt.optimizer["param_groups"], "state": opt_scalars},
        "rng": ckpt.rng, "config": ckpt.config, "model_config": ckpt.model_config,
        "tokenizer": ckpt.tokenizer, "extra": ckpt.extra,
    }
    _atomic_write(out / MANIFEST, json.dumps(manifest, indent=1).encode())
    _fsync_dir(out)
    for old in out.glob("ckpt-*.npz"):  # superseded array files, only once the manifest moved on
        if old.name != npz_name:
            old.unlink()
    for tmp in out.glob(".ckpt-*.tmp"):  # leftovers of a save that crashed
        tmp.unlink()
    for tmp in out.glob(f".{MANIFEST}.*.tmp"):
        tmp.unlink()
    return out / MANIFEST


def load_checkpoint(path: str | Path) -> Checkpoint:
    """The checkpoint in folder `path` (or at manifest `path`), fully validated."""
    p = Path(path)
    manifest_path = p / MANIFEST if p.is_dir() or not p.suffix else p
    if not manifest_path.is_file():
        raise CheckpointError(f"no checkpoint at {p}: {manifest_path.name} not found")
    try:
        m = json.loads(manifest_path.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointError(f"checkpoint manifest {manifest_path} is truncated or corrupted "
                              f"(not valid JSON: {e})") from None
    _check_manifest(m, manifest_path)
    arrays = _read_arrays(manifest_path.parent / Path(m["arrays"]).name, m)
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


def _check_manifest(m: Any, where: Path) -> None:
    """Raise CheckpointError naming the first manifest field that has the wrong structure, so
    nothing later meets a KeyError or TypeError; load_checkpoint reads only checked fields."""

    def bad(field: str, want: str, got: Any, entry: str | None = None) -> CheckpointError:
        part = f"field {field!r}" + ("" if entry is None else f" entry {entry!r}")
        return CheckpointError(f"checkpoint manifest {where}: {part} must be {want}, got "
                               f"{_short(got)}")

    if not isinstance(m, dict):
        raise CheckpointError(f"checkpoint manifest {where} is not a JSON object "
                              f"(got {type(m).__name__})")
    missing = [k for k in REQUIRED if k not in m]
    if missing:
        raise CheckpointError(f"checkpoint manifest {where} lacks {missing}")
    if m["format"] != FORMAT or m["version"] != VERSION:
        raise CheckpointError(f"{where}: unsupported format {m['format']!r} version "
                              f"{m['version']!r} (expected {FORMAT!r} version {VERSION})")
    if not _is_int(m["step"]) or m["step"] < 0:
        raise bad("step", "an int >= 0", m["step"])
    if not isinstance(m["arrays"], str) or not m["arrays"]:
        raise bad("arrays", "the array file's name", m["arrays"])
    if not (isinstance(m["sha256"], str) and re.fullmatch(r"[0-9a-f]{64}", m["sha256"])):
        raise bad("sha256", "64 lowercase hex digits", m["sha256"])
    for field in ("rng", "config", "model_config", "tokenizer", "extra"):
        if field in m and not isinstance(m[field], dict):
            raise bad(field, "a JSON object", m[field])
    if not isinstance(m["shapes"], dict):
        raise bad("shapes", "an object of array name -> [shape, dtype]", m["shapes"])
    for name, entry in m["shapes"].items():
        ok = (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)
              and all(_is_int(n) and n >= 0 for n in entry[0]) and isinstance(entry[1], str))
        if not (ok and _ARRAY_NAME.fullmatch(name)):
            raise bad("shapes", "[shape, dtype] under a model/NAME or optim/INDEX/NAME key",
                      entry, name)
    opt = m["optimizer"]
    if not (isinstance(opt, dict) and isinstance(opt.get("state"), dict)
            and isinstance(opt.get("param_groups"), list)):
        raise bad("optimizer", "an object with 'state' (object) and 'param_groups' (list)", opt)
    for i, st in opt["state"].items():
        if not (re.fullmatch(r"[0-9]+", i) and isinstance(st, dict)):
            raise bad("optimizer", "an object under a parameter-index key (in 'state')", st, i)
    if not all(isinstance(g, dict) for g in opt["param_groups"]):
        raise bad("optimizer", "param_groups: a list of objects", opt["param_groups"])


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _short(v: Any) -> str:
    """repr of a manifest value, cut so an error stays one readable line."""
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _read_arrays(npz_path: Path, m: dict[str, Any]) -> dict[str, np.ndarray]:
    """The npz's arrays after checking its hash and that names/shapes/dtypes match the manifest."""
    try:
        blob = npz_path.read_bytes()
    except OSError as e:
        raise CheckpointError(f"checkpoint array file {npz_path} cannot be read: {e}") from None
    digest = hashlib.sha256(blob).hexdigest()
    if digest != m["sha256"]:
        raise CheckpointError(
            f"checkpoint array file {npz_path} is truncated or corrupted: sha256 {digest[:16]}... "
            f"({len(blob)} bytes) does not match the manifest's {m['sha256'][:16]}... "
            f"({m.get('nbytes')} bytes)")
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (ValueError, OSError, zipfile.BadZipFile) as e:
        raise CheckpointError(f"checkpoint array file {npz_path} is unreadable: {e}") from None
    expected = {k: (tuple(shape), dtype) for k, (shape, dtype) in m["shapes"].items()}
    got = {k: (v.shape, v.dtype.str) for k, v in arrays.items()}
    if got != expected:
        diff = sorted(k for k in set(got) | set(expected) if got.get(k) != expected.get(k))
        raise CheckpointError(f"checkpoint {npz_path}: arrays disagree with the manifest: {diff}")
    return arrays


def _write_and_sync(f, data: bytes) -> None:
    """Write all of `data` and force it to disk (a seam that tests use to simulate crashes)."""
    f.write(data)
    f.flush()
    os.fsync(f.fileno())


def _atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so readers see the old file or the new one, never a part."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            _write_and_sync(f, data)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a checkpoint is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _fsync_dir(path: Path) -> None:
    """Persist the directory entries (the renames) themselves."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load_model(path: str | Path):
    """(model, tokenizer, checkpoint) rebuilt from the checkpoint at `path`, weights loaded.

    The model is in eval mode, in the dtype it was trained in; no corpus is needed.
    """
    from ..data import load_tokenizer
    from ..engine import Generator
    from ..nn.gpt import GPT, GPTConfig

    ckpt = load_checkpoint(path)
    try:
        config = GPTConfig(**ckpt.model_config)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"checkpoint at {path} has an invalid model config: {e}") from None
    dtype = next(iter(ckpt.model.values())).dtype
    model = GPT(config, generator=Generator(0), dtype=dtype)  # init is overwritten just below
    model.load_state_dict(ckpt.model)
    return model.eval(), load_tokenizer(ckpt.tokenizer), ckpt
