"""torch's default_collate and default_convert (torch.utils.data._utils.collate): how a list of
samples becomes a batch, and what batch_size=None yields. Uses the engine only.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np

from ...engine import Tensor, bool_, float64, int64, stack, tensor


def _numpy_values(item: Any) -> bool:
    """True for NumPy arrays and scalars that torch turns into tensors (not NumPy strings)."""
    return isinstance(item, (np.ndarray, np.generic)) and not isinstance(item, (str, bytes))


def _refused(item: Any) -> bool:
    """Arrays of strings or objects, which torch refuses to turn into tensors."""
    return isinstance(item, np.ndarray) and item.dtype.kind in "OSUa"


def default_collate(batch: Sequence) -> Any:
    """torch's rule: tensors stacked (a new first dim), NumPy arrays and scalars likewise (their
    dtype kept), Python floats to a float64 tensor, ints to int64, bools to bool, strings and
    bytes left as they come, and dicts, namedtuples, tuples and lists collated field by field (a
    tuple's fields come back as a list, as torch's)."""
    first = batch[0]
    if isinstance(first, Tensor):
        return stack(batch)
    if _numpy_values(first):
        if _refused(first):
            raise TypeError(f"default_collate: cannot batch NumPy arrays of dtype {first.dtype}")
        return stack([tensor(np.asarray(a)) for a in batch])
    if isinstance(first, bool):
        return tensor(batch, dtype=bool_)
    if isinstance(first, int):
        return tensor(batch, dtype=int64)
    if isinstance(first, float):
        return tensor(batch, dtype=float64)
    if isinstance(first, (str, bytes)):
        return batch
    if isinstance(first, Mapping):
        fields = {key: default_collate([item[key] for item in batch]) for key in first}
        return _same_mapping(first, fields)
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple keeps its type
        return type(first)(*(default_collate(f) for f in zip(*batch)))
    if isinstance(first, Sequence):
        if any(len(item) != len(first) for item in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of "
                               "equal size")
        return [default_collate(f) for f in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                    f"or lists; found {type(first).__name__}")


def default_convert(item: Any) -> Any:
    """What batch_size=None yields, as torch's: NumPy arrays and scalars become tensors, tuples
    lists (a namedtuple keeps its type), dicts and lists converted field by field, the rest as
    is."""
    if isinstance(item, Tensor):
        return item
    if _numpy_values(item):
        return item if _refused(item) else tensor(np.asarray(item))
    if isinstance(item, Mapping):
        return _same_mapping(item, {key: default_convert(v) for key, v in item.items()})
    if isinstance(item, tuple) and hasattr(item, "_fields"):
        return type(item)(*(default_convert(v) for v in item))
    if isinstance(item, Sequence) and not isinstance(item, (str, bytes)):
        return [default_convert(v) for v in item]
    return item


def _same_mapping(like: Mapping, fields: dict) -> Mapping:
    """fields in a mapping of like's type when it can be copied and updated, as torch keeps an
    OrderedDict or a dict subclass; a plain dict otherwise."""
    if isinstance(like, MutableMapping):
        try:
            clone = copy.copy(like)
            clone.update(fields)
            return clone
        except TypeError:
            pass
    return fields
