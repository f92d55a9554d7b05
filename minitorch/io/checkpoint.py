"""Checkpoints that cannot execute code, are never half-written, and are read within bounds.

A checkpoint is two files in the run folder: ckpt-<step>-<hash>.safetensors (every array: weights
as model/<name>, optimizer moments as optim/<index>/<name>) and checkpoint.json, the manifest
(step, configs, tokenizer, RNG states, optimizer scalars, and the array file's sha256, size,
names, shapes and dtypes). Both are written atomically, the array file first; the manifest names
the latest checkpoint, so a crash at any point leaves the previous one intact.

Loading reads nothing it has not bounded: the manifest (size-capped) is checked field by field,
its model config against the parameter cap and its arrays against that config's parameter
count; the array file's header is compared with the manifest (names, dtypes, shapes, byte
offsets, file size) and its sha256 streamed, all before any array data is read. Any failure is a
CheckpointError: one line naming the file and what is wrong.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save as safetensors_bytes

from ..nn.gpt import GPTConfig
from . import atomic
from .limits import check_model_size

MANIFEST = "checkpoint.json"
FORMAT = "minitorch-checkpoint"
VERSION = 2  # 1 stored the arrays as .npz; 2 as .safetensors
REQUIRED = ("format", "version", "step", "arrays", "sha256", "nbytes", "shapes", "optimizer",
            "rng", "config", "model_config", "tokenizer")  # manifest fields ("extra" is optional)
MAX_MANIFEST_BYTES = 32 << 20  # a manifest is configs and scalars: a few MB even with BPE merges
MAX_HEADER_BYTES = 8 << 20  # a safetensors header lists names, shapes and offsets only
DTYPES = {"<f2": "F16", "<f4": "F32", "<f8": "F64"}  # numpy dtype.str -> safetensors dtype
_ARRAY_NAME = re.compile(r"model/.+|optim/[0-9]+/.+")  # the names save_checkpoint gives arrays
_HASH_CHUNK = 1 << 20


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, truncated, corrupted, too large or of an unknown format."""


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
                opt_scalars[str(i)][k] = v.item() if isinstance(v, np.generic) else v
    bad = sorted(k for k, v in arrays.items() if v.dtype.str not in DTYPES)
    if bad:
        raise CheckpointError(f"cannot save arrays {bad[:3]}: checkpoints hold float16/32/64 only")
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
    for old in [*out.glob("ckpt-*.safetensors"), *out.glob("ckpt-*.npz")]:
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
    m = _read_manifest(manifest_path, p)
    _check_manifest(m, manifest_path, max_params)
    array_path = manifest_path.parent / Path(m["arrays"]).name  # never outside the run folder
    arrays = _read_arrays(array_path, m)
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


def model_config_of(m: dict[str, Any], where: Path | str) -> GPTConfig:
    """The GPTConfig a (checked) manifest or Checkpoint.model_config describes: known keys, each
    of its field's type (ints >= 1, floats finite and > 0), then GPTConfig's own checks."""
    mc = m["model_config"] if "model_config" in m else m
    defaults = {f.name: f.default for f in dataclasses.fields(GPTConfig)}
    for key, value in mc.items():
        want = type(defaults.get(key))
        ok = (key in defaults and (type(value) is want or (want is float and type(value) is int))
              and (want is not int or value >= 1)
              and (want is not float or (math.isfinite(value) and value > 0)))
        if not ok:
            need = {int: "an int >= 1", float: "a finite number > 0"}.get(want, want.__name__)
            raise CheckpointError(f"checkpoint {where}: invalid model_config: "
                                  + (f"{key!r} must be {need}, got {_short(value)}"
                                     if key in defaults else f"unknown key {_short(key)}"))
    try:
        return GPTConfig(**mc)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"checkpoint {where}: invalid model_config: {e}") from None


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
    """The array file's arrays, read only after its header and hash match the manifest."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            header, n = _read_header(f, size, path)
            _check_header(header, m, size, 8 + n, path)
            f.seek(0)
            h = hashlib.sha256()
            while chunk := f.read(_HASH_CHUNK):
                h.update(chunk)
    except OSError as e:
        raise CheckpointError(f"checkpoint array file {path} cannot be read: "
                              f"{e.strerror or e}") from None
    if h.hexdigest() != m["sha256"]:
        raise CheckpointError(
            f"checkpoint array file {path} is corrupted: sha256 {h.hexdigest()[:16]}... does "
            f"not match the manifest's {m['sha256'][:16]}...")
    try:
        with safe_open(path, framework="np") as f:
            return {k: np.array(f.get_tensor(k)) for k in m["shapes"]}
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"checkpoint array file {path} is unreadable: {e}") from None


def _read_header(f, size: int, path: Path) -> tuple[dict[str, Any], int]:
    """The safetensors JSON header (8-byte little-endian length, then JSON), size-capped."""
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
    header.pop("__metadata__", None)
    return header, n


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
                              f"(names, shapes or dtypes): {_short(diff)}")
    spans = []
    for k, (shape, dt) in m["shapes"].items():
        off = header[k].get("data_offsets")
        want = math.prod(shape) * np.dtype(dt).itemsize
        if not (isinstance(off, list) and len(off) == 2 and all(_is_int(o) for o in off)
                and off[1] - off[0] == want):
            raise CheckpointError(f"checkpoint array file {path}: array {k!r} has byte range "
                                  f"{_short(off)}, but {shape} {dt} needs {want:,} bytes")
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


# -- the manifest's structure ------------------------------------------------------------------


def _check_manifest(m: Any, where: Path, max_params: int | None) -> None:
    """Raise CheckpointError naming the first manifest field that has the wrong structure or an
    impossible size, so nothing later meets a KeyError, a TypeError or an unbounded read."""

    def bad(field: str, want: str, got: Any) -> CheckpointError:
        return CheckpointError(f"checkpoint manifest {where}: field {field!r} must be {want}, "
                               f"got {_short(got)}")

    if not isinstance(m, dict):
        raise CheckpointError(f"checkpoint manifest {where} is not a JSON object "
                              f"(got {type(m).__name__})")
    if m.get("format") == FORMAT and m.get("version") == 1:
        raise CheckpointError(f"checkpoint {where} is format version 1 (.npz arrays), which this "
                              f"version no longer reads; retrain, or load it with the release "
                              f"that wrote it and save it again")
    missing = [k for k in REQUIRED if k not in m]
    if missing:
        raise CheckpointError(f"checkpoint manifest {where} lacks {missing}")
    if m["format"] != FORMAT or m["version"] != VERSION:
        raise CheckpointError(f"{where}: unsupported format {_short(m['format'])} version "
                              f"{_short(m['version'])} (expected {FORMAT!r} version {VERSION})")
    if not _is_int(m["step"]) or m["step"] < 0:
        raise bad("step", "an int >= 0", m["step"])
    if not isinstance(m["arrays"], str) or not m["arrays"]:
        raise bad("arrays", "the array file's name", m["arrays"])
    if not (isinstance(m["sha256"], str) and re.fullmatch(r"[0-9a-f]{64}", m["sha256"])):
        raise bad("sha256", "64 lowercase hex digits", m["sha256"])
    if not _is_int(m["nbytes"]) or m["nbytes"] < 8:
        raise bad("nbytes", "the array file's size in bytes", m["nbytes"])
    for field in ("rng", "config", "model_config", "tokenizer", "extra"):
        if field in m and not isinstance(m[field], dict):
            raise bad(field, "a JSON object", m[field])
    _check_extra(m.get("extra", {}), bad)
    _check_shapes(m["shapes"], bad)
    _check_optimizer(m["optimizer"], m["shapes"], bad)
    _check_size(m, where, max_params)


def _check_extra(extra: dict[str, Any], bad) -> None:
    """The run facts the trainer reads back must have their types."""
    elapsed = extra.get("elapsed", 0.0)
    if not (isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool)
            and math.isfinite(elapsed) and elapsed >= 0):
        raise bad("extra.elapsed", "a finite number of seconds >= 0", elapsed)
    if "corpus_sha256" in extra and not isinstance(extra["corpus_sha256"], str):
        raise bad("extra.corpus_sha256", "a hex string", extra["corpus_sha256"])
    if "params" in extra and not (_is_int(extra["params"]) and extra["params"] >= 0):
        raise bad("extra.params", "an int >= 0", extra["params"])


def _check_shapes(shapes: Any, bad) -> None:
    if not isinstance(shapes, dict) or not shapes:
        raise bad("shapes", "an object of array name -> [shape, dtype]", shapes)
    for name, entry in shapes.items():
        ok = (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)
              and all(_is_int(n) and n >= 0 for n in entry[0]) and isinstance(entry[1], str)
              and entry[1] in DTYPES)
        if not (ok and _ARRAY_NAME.fullmatch(name)):
            raise bad(f"shapes.{name}", "[shape, dtype] (float16/32/64) under a model/NAME or "
                      "optim/INDEX/NAME key", entry)


def _check_optimizer(opt: Any, shapes: dict[str, Any], bad) -> None:
    """Optimizer state: per parameter index the same fields (scalars plus arrays), 'step' an
    int >= 0, arrays shaped like a model parameter; param_groups a list of objects."""
    if not (isinstance(opt, dict) and isinstance(opt.get("state"), dict)
            and isinstance(opt.get("param_groups"), list)):
        raise bad("optimizer", "an object with 'state' (object) and 'param_groups' (list)", opt)
    if not all(isinstance(g, dict) and isinstance(g.get("params"), list)
               and all(_is_int(i) and i >= 0 for i in g["params"]) for g in opt["param_groups"]):
        raise bad("optimizer.param_groups", "a list of objects with a 'params' list of indices",
                  opt["param_groups"])
    for i, st in opt["state"].items():
        if not (re.fullmatch(r"[0-9]+", i) and isinstance(st, dict)):
            raise bad(f"optimizer.state.{i}", "an object under a parameter index", st)
    arrays: dict[str, dict[str, list]] = {}
    for name, (shape, _) in shapes.items():
        if name.startswith("optim/"):
            _, i, key = name.split("/", 2)
            arrays.setdefault(i, {})[key] = shape
    indices = set(opt["state"]) | set(arrays)
    n_params = sum(len(g["params"]) for g in opt["param_groups"])
    model_shapes = {tuple(s) for k, (s, _) in shapes.items() if k.startswith("model/")}
    fields: dict[str, set[str]] = {}
    for i in sorted(indices, key=lambda s: (len(s), s)):
        st = opt["state"].get(i, {})
        if int(i) >= n_params:
            raise bad(f"optimizer.state.{i}", f"state of one of the {n_params} parameters in "
                      "param_groups", st)
        for key, v in st.items():
            if key == "step" and not (_is_int(v) and v >= 0):
                raise bad(f"optimizer.state.{i}.step", "an int >= 0", v)
            if not (v is None or isinstance(v, (bool, int, float, str))):
                raise bad(f"optimizer.state.{i}.{key}", "a scalar", v)
        own = arrays.get(i, {})
        if len({tuple(s) for s in own.values()}) > 1 or not all(
                tuple(s) in model_shapes for s in own.values()):
            raise bad(f"optimizer.state.{i}", "arrays shaped like one model parameter", own)
        fields[i] = set(st) | set(own)
    if fields:
        everyone = set().union(*fields.values())
        for i, have in fields.items():
            if have != everyone:
                lacking = sorted(everyone - have)
                raise bad(f"optimizer.state.{i}.{lacking[0]}", "present (the other parameters' "
                          "state has it)", "nothing")


def _check_size(m: dict[str, Any], where: Path, max_params: int | None) -> None:
    """The model config under the cap, and the arrays no larger than that config implies."""
    cfg = model_config_of(m, where)
    model = [s for k, (s, _) in m["shapes"].items() if k.startswith("model/")]
    itemsize = max(np.dtype(dt).itemsize for _, dt in m["shapes"].values())
    try:
        n = check_model_size(cfg, np.dtype(f"<f{itemsize}"), max_params)
    except ValueError as e:
        raise CheckpointError(f"checkpoint {where}: {e}") from None
    held = sum(math.prod(s) for s in model)
    if held != n:
        raise CheckpointError(f"checkpoint {where}: its model arrays hold {held:,} values, but "
                              f"its model_config describes {n:,} parameters")
    moments = sum(math.prod(s) for k, (s, _) in m["shapes"].items() if k.startswith("optim/"))
    if moments > 4 * n:
        raise CheckpointError(f"checkpoint {where}: its optimizer arrays hold {moments:,} values,"
                              f" more than 4x the model's {n:,} parameters")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _short(v: Any) -> str:
    """repr of a manifest value, cut so an error stays one readable line."""
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."
