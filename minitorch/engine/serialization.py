"""save(obj, f) and load(f): torch.save and torch.load for what scripts save with them (a
state_dict, an optimizer's, a dict of tensors, numbers and strings), with no pickle: arrays go
into a NumPy .npz archive and the structure into a JSON entry beside them, so loading a file
runs no code from it (torch's weights_only=True, always). Must not import nn or io.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from .tensor import Tensor

_STRUCTURE = "structure.json"  # the archive entry that holds the nesting; arrays are a0, a1, ...


def save(obj: Any, f: str | os.PathLike | Any) -> None:
    """Write obj (Tensors, ndarrays, numbers, strings, bools, None, in dicts, lists and tuples)
    to a path or a binary file object. A tensor is saved detached: its values and
    requires_grad."""
    arrays: list[np.ndarray] = []
    structure = _encode(obj, arrays)
    entries = {f"a{i}": a for i, a in enumerate(arrays)}
    entries[_STRUCTURE] = np.frombuffer(json.dumps(structure).encode(), np.uint8)
    if not isinstance(f, (str, os.PathLike)):
        np.savez(f, **entries)
        return
    temp = f"{os.fspath(f)}.tmp-{os.getpid()}"  # a crash mid-write leaves the old file whole
    try:
        with open(temp, "wb") as out:  # a path keeps its name (np.savez would add .npz)
            np.savez(out, **entries)
        os.replace(temp, f)
    finally:
        if os.path.exists(temp):
            os.remove(temp)


def load(f: str | os.PathLike | Any, map_location: Any = None, weights_only: bool = True) -> Any:
    """Read what save wrote. map_location may name the CPU only; weights_only=False is refused
    (nothing here ever unpickles)."""
    if map_location is not None and str(map_location).split(":")[0] != "cpu":
        raise RuntimeError(f"load: minitorch runs on the CPU only, got map_location "
                           f"{map_location!r}")
    if not weights_only:
        raise ValueError("load: minitorch files hold only tensors, numbers and containers; "
                         "weights_only=False (unpickling arbitrary objects) is not supported")
    try:
        with np.load(f, allow_pickle=False) as archive:
            if _STRUCTURE not in archive.files:
                raise ValueError("no structure entry")
            structure = json.loads(archive[_STRUCTURE].tobytes().decode())
            arrays = {name: archive[name] for name in archive.files if name != _STRUCTURE}
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"load: {getattr(f, 'name', f)} is not a file minitorch.save wrote "
                         f"({e})") from None
    return _decode(structure, arrays)


def _encode(obj: Any, arrays: list) -> Any:
    if isinstance(obj, Tensor):
        arrays.append(obj.data)
        return {"tensor": len(arrays) - 1, "requires_grad": bool(obj.requires_grad)}
    if isinstance(obj, np.ndarray):
        arrays.append(obj)
        return {"array": len(arrays) - 1}
    if isinstance(obj, np.generic):
        obj = obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj  # (Python's json writes and reads inf and nan)
    if isinstance(obj, dict):
        if not all(isinstance(k, (str, int)) for k in obj):
            raise TypeError("save: dict keys must be strings or integers")
        return {"dict": [[k, _encode(v, arrays)] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        return {"tuple" if isinstance(obj, tuple) else "list": [_encode(v, arrays) for v in obj]}
    raise TypeError(f"save: cannot save a {type(obj).__name__} (tensors, arrays, numbers, "
                    "strings, None, and dicts, lists and tuples of them)")


def _decode(s: Any, arrays: dict) -> Any:
    if not isinstance(s, dict):
        return s
    if "tensor" in s:
        return Tensor(arrays[f"a{s['tensor']}"], requires_grad=s["requires_grad"])
    if "array" in s:
        return arrays[f"a{s['array']}"]
    if "dict" in s:
        return {k: _decode(v, arrays) for k, v in s["dict"]}
    items = [_decode(v, arrays) for v in s.get("list", s.get("tuple", []))]
    return tuple(items) if "tuple" in s else items
