"""The checkpoint manifest's structure, checked field by field before anything reads the data:
every field the loaders and the trainer read back has its type, the optimizer state is the same
for every parameter, the model config is under the parameter cap and the arrays hold exactly the
parameters it describes. Failures are CheckpointError: one line naming the file and the field.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..models.gpt import GPTConfig
from .limits import check_model_size

FORMAT = "minitorch-checkpoint"
VERSION = 2  # arrays as .safetensors (version 1, .npz arrays, is no longer read)
REQUIRED = ("format", "version", "step", "arrays", "sha256", "nbytes", "shapes", "optimizer",
            "rng", "config", "model_config", "tokenizer")  # manifest fields ("extra" is optional)
DTYPES = {"<f2": "F16", "<f4": "F32", "<f8": "F64"}  # numpy dtype.str -> safetensors dtype
_ARRAY_NAME = re.compile(r"model/.+|optim/[0-9]+/.+")  # the names save_checkpoint gives arrays


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, truncated, corrupted, too large or of an unknown format."""


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
                                  + (f"{key!r} must be {need}, got {short_repr(value)}"
                                     if key in defaults else f"unknown key {short_repr(key)}"))
    try:
        return GPTConfig(**mc)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"checkpoint {where}: invalid model_config: {e}") from None


def check_manifest(m: Any, where: Path, max_params: int | None) -> None:
    """Raise CheckpointError naming the first manifest field that has the wrong structure or an
    impossible size, so nothing later meets a KeyError, a TypeError or an unbounded read."""

    def bad(field: str, want: str, got: Any) -> CheckpointError:
        return CheckpointError(f"checkpoint manifest {where}: field {field!r} must be {want}, "
                               f"got {short_repr(got)}")

    if not isinstance(m, dict):
        raise CheckpointError(f"checkpoint manifest {where} is not a JSON object "
                              f"(got {type(m).__name__})")
    missing = [k for k in REQUIRED if k not in m]
    if missing:
        raise CheckpointError(f"checkpoint manifest {where} lacks {missing}")
    if m["format"] != FORMAT or not is_int(m["version"]) or m["version"] != VERSION:
        raise CheckpointError(f"{where}: unsupported format {short_repr(m['format'])} version "
                              f"{short_repr(m['version'])} (expected {FORMAT!r} version "
                              f"{VERSION})")
    if not is_int(m["step"]) or m["step"] < 0:
        raise bad("step", "an int >= 0", m["step"])
    if not isinstance(m["arrays"], str) or not m["arrays"]:
        raise bad("arrays", "the array file's name", m["arrays"])
    if not (isinstance(m["sha256"], str) and re.fullmatch(r"[0-9a-f]{64}", m["sha256"])):
        raise bad("sha256", "64 lowercase hex digits", m["sha256"])
    if not is_int(m["nbytes"]) or m["nbytes"] < 8:
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
    if "params" in extra and not (is_int(extra["params"]) and extra["params"] >= 0):
        raise bad("extra.params", "an int >= 0", extra["params"])


def _check_shapes(shapes: Any, bad) -> None:
    if not isinstance(shapes, dict) or not shapes:
        raise bad("shapes", "an object of array name -> [shape, dtype]", shapes)
    for name, entry in shapes.items():
        ok = (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)
              and all(is_int(n) and n >= 0 for n in entry[0]) and isinstance(entry[1], str)
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
               and all(is_int(i) and i >= 0 for i in g["params"]) for g in opt["param_groups"]):
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
            if key == "step" and not (is_int(v) and v >= 0):
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


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def short_repr(v: Any) -> str:
    """repr of a manifest value, cut so an error stays one readable line."""
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."
