"""save(obj, f) and load(f): torch.save and torch.load for what scripts save with them (a
state_dict, an optimizer's or a scheduler's, a dict of tensors, numbers and strings), with no
pickle: arrays go into a NumPy .npz archive, uncompressed, and the structure into a JSON entry
beside them, so loading a file runs no code from it, reads only the entries the structure names,
and allocates no more than the file holds. Must not import nn or io.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from collections import Counter
from typing import Any

import numpy as np

from .tensor import Tensor

_STRUCTURE = "structure.json"  # the archive entry that holds the nesting; arrays are a0, a1, ...


def save(obj: Any, f: str | os.PathLike | Any) -> None:
    """Write obj (Tensors, ndarrays, numbers, strings, bools, None, in dicts with string or
    integer keys, lists, tuples and Counters) to a path or a binary file object. A tensor is
    saved detached: its values and requires_grad. A path is written through a temporary file
    beside it, so a failed save leaves the old file as it was."""
    arrays: list[np.ndarray] = []
    structure = _encode(obj, arrays)  # refuses what it cannot save before anything is written
    entries = {f"a{i}": a for i, a in enumerate(arrays)}
    entries[_STRUCTURE] = np.frombuffer(json.dumps(structure).encode(), np.uint8)
    if not isinstance(f, (str, os.PathLike)):
        np.savez(f, **entries)
        return
    temp = f"{os.fspath(f)}.tmp-{os.getpid()}"
    try:
        with open(temp, "wb") as out:  # a path keeps its name (np.savez would add .npz)
            np.savez(out, **entries)
        os.replace(temp, f)
    finally:
        if os.path.exists(temp):
            os.remove(temp)


def load(f: str | os.PathLike | Any, map_location: Any = None,
         weights_only: bool | None = None) -> Any:
    """Read what save wrote. map_location: None, the CPU, or a mapping function or dict (all
    tensors are on the CPU already); another device is refused. weights_only is accepted with
    any value: nothing here ever unpickles."""
    if isinstance(map_location, str) and map_location.split(":")[0] != "cpu":
        raise RuntimeError(f"load: minitorch runs on the CPU only, got map_location "
                           f"{map_location!r}")
    try:
        with zipfile.ZipFile(f) as archive:
            structure = json.loads(_read(archive, _STRUCTURE).tobytes().decode())
            return _decode(structure, lambda i: _read(archive, f"a{i}"))
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, TypeError, EOFError, RecursionError,
            zipfile.BadZipFile) as e:
        raise ValueError(f"load: {getattr(f, 'name', f)} is not a file minitorch.save wrote "
                         f"({type(e).__name__}: {e})") from None


def _read(archive: zipfile.ZipFile, name: str) -> np.ndarray:
    """One array entry, checked before it is read: stored uncompressed (as save writes), no
    object dtype, and a header whose shape fits the entry's size."""
    info = archive.getinfo(f"{name}.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"entry {name} is compressed")
    with archive.open(info) as fh:
        version = np.lib.format.read_magic(fh)
        header = (np.lib.format.read_array_header_1_0 if version == (1, 0) else
                  np.lib.format.read_array_header_2_0)
        shape, _, dtype = header(fh)
    if dtype.hasobject or math.prod(shape) * dtype.itemsize > info.file_size:
        raise ValueError(f"entry {name} declares {shape} {dtype}, more than it holds")
    with archive.open(info) as fh:
        return np.lib.format.read_array(fh, allow_pickle=False)


def _encode(obj: Any, arrays: list) -> Any:
    if isinstance(obj, Tensor):
        return {"tensor": _array(obj.data, arrays), "requires_grad": bool(obj.requires_grad)}
    if isinstance(obj, np.ndarray):
        return {"array": _array(obj, arrays)}
    if isinstance(obj, np.generic):
        obj = obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj  # (Python's json writes and reads inf and nan)
    if isinstance(obj, dict):
        if not all(isinstance(k, (str, int)) for k in obj):
            raise TypeError("save: dict keys must be strings or integers")
        kind = "counter" if isinstance(obj, Counter) else "dict"  # (MultiStepLR's milestones)
        return {kind: [[k, _encode(v, arrays)] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        return {"tuple" if isinstance(obj, tuple) else "list": [_encode(v, arrays) for v in obj]}
    raise TypeError(f"save: cannot save a {type(obj).__name__} (tensors, arrays, numbers, "
                    "strings, None, and dicts, lists and tuples of them)")


def _array(a: np.ndarray, arrays: list) -> int:
    if a.dtype.hasobject:
        raise TypeError("save: cannot save an array of Python objects (dtype object)")
    arrays.append(a)
    return len(arrays) - 1


def _decode(s: Any, read) -> Any:
    if not isinstance(s, dict):
        return s
    if "tensor" in s:
        return Tensor(read(s["tensor"]), requires_grad=s["requires_grad"])
    if "array" in s:
        return read(s["array"])
    if "dict" in s or "counter" in s:
        items = {k: _decode(v, read) for k, v in s.get("dict", s.get("counter"))}
        return Counter(items) if "counter" in s else items
    items = [_decode(v, read) for v in s.get("list", s.get("tuple", []))]
    return tuple(items) if "tuple" in s else items
