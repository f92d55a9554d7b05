"""minitorch.save and minitorch.load, as torch.save and torch.load for what scripts save with them
(state_dicts, checkpoint dicts of tensors, numbers, strings and containers). save writes
minitorch's format (an uncompressed .npz with a JSON structure entry: no pickle) or, with
format="torch", torch's zip; load reads both, and files torch.save wrote, running no code.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import struct
import zipfile
import zlib
from collections import Counter
from typing import Any

import numpy as np

from ..engine import Tensor
from .atomic import atomic_writer
from .torch_zip import read_torch, torch_writer

_STRUCTURE = "structure.json"  # the archive entry that holds the nesting; arrays are a0, a1, ...
FORMATS = ("minitorch", "torch")
_default = ["minitorch"]  # what save writes without format=; `minitorch run` makes it "torch"


def set_default_format(format: str) -> str:  # noqa: A002
    """Make `format` what save writes when none is given; returns the previous default.
    `minitorch run` sets "torch" for the script's run: its torch.save must give a file torch
    can load."""
    if format not in FORMATS:
        raise ValueError(f"set_default_format: format must be one of {FORMATS}, got {format!r}")
    previous, _default[0] = _default[0], format
    return previous


class LoadError(pickle.UnpicklingError, ValueError):
    """A file load refuses, in one line naming it: damaged, foreign, or asking to run code.
    Both a ValueError and the pickle.UnpicklingError torch.load(weights_only=True) raises."""


def save(obj: Any, f: str | os.PathLike | Any, format: str | None = None) -> None:  # noqa: A002
    """Write obj (Tensors, ndarrays, numbers, strings, bools, None, in dicts with string or
    integer keys, lists, tuples and Counters) to a path or a binary file object.

    Args:
        format: "minitorch" (the default: an .npz archive with a JSON structure entry, read
            back exactly, arrays as arrays) or "torch" (torch.save's zip, which
            torch.load(weights_only=True) reads; arrays are written as tensors; the default
            inside `minitorch run`). None: the default (set_default_format).
    A tensor is saved detached: its values and requires_grad. A path is written atomically
    (io.atomic), so a failed save leaves the old file as it was; its name is kept as given.
    """
    format = _default[0] if format is None else format
    if format not in FORMATS:
        raise ValueError(f"save: format must be one of {FORMATS}, got {format!r}")
    if format == "torch":
        write = torch_writer(obj)
    else:
        arrays: list[np.ndarray] = []
        structure = _encode(obj, arrays)  # refuses what it cannot save before anything is written
        entries = {f"a{i}": a for i, a in enumerate(arrays)}
        entries[_STRUCTURE] = np.frombuffer(json.dumps(structure).encode(), np.uint8)

        def write(out):
            np.savez(out, **entries)
    if not isinstance(f, (str, os.PathLike)):
        write(f)
        return
    with atomic_writer(f) as out:
        write(out)


def load(f: str | os.PathLike | Any, map_location: Any = None,
         weights_only: bool | None = None) -> Any:
    """Read what save or torch.save wrote.

    map_location: None, the CPU, or a mapping function or dict (every tensor loads to the CPU,
    whatever device a torch file names); another device is refused. weights_only is accepted
    with any value: load always reads as torch's weights_only=True does, and never runs code.
    Raises:
        LoadError: one line naming the file and what is wrong with it or what was refused.
    """
    if isinstance(map_location, str) and map_location.split(":")[0] != "cpu":
        raise RuntimeError(f"load: minitorch runs on the CPU only, got map_location "
                           f"{map_location!r}")
    name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "<file>")
    try:
        size = _size(f)
        with zipfile.ZipFile(f) as archive:
            if f"{_STRUCTURE}.npy" not in archive.namelist():
                return read_torch(archive, size)
            structure = json.loads(_read(archive, _STRUCTURE).tobytes().decode())
            return _decode(structure, _once(lambda i: _read(archive, f"a{i}")))
    except FileNotFoundError:
        raise
    except pickle.UnpicklingError as e:
        raise LoadError(f"load: {name}: {e}") from None
    except (OSError, ValueError, KeyError, TypeError, EOFError, RecursionError, IndexError,
            AttributeError, OverflowError, MemoryError, struct.error, zlib.error,
            zipfile.BadZipFile) as e:
        raise LoadError(f"load: {name} is not a file minitorch.save or torch.save wrote "
                        f"({type(e).__name__}: {e})") from None


def _size(f: Any) -> int:
    if isinstance(f, (str, os.PathLike)):
        return os.stat(f).st_size
    here = f.tell()
    end = f.seek(0, os.SEEK_END)
    f.seek(here)
    return end


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


def _once(read):
    """read, refusing an entry asked for twice: save writes each array once, and a structure
    that names one entry 400 times must not make load allocate it 400 times."""
    seen: set = set()

    def read_once(i: Any) -> np.ndarray:
        key = repr(i)  # (a forged index may be a list: unhashable)
        if key in seen:
            raise ValueError(f"entry a{i} is named twice in the structure (save writes each "
                             "array once)")
        seen.add(key)
        return read(i)
    return read_once


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
