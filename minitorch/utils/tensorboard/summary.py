"""The Summary messages torch.utils.tensorboard writes (scalars, text, histograms, hparams),
encoded field by field; field numbers from TensorBoard's summary, tensor and hparams protos."""

from __future__ import annotations

import numpy as np

from ...engine import Tensor
from .records import double, float32, float32_bytes, integer, message, packed_doubles, string

DT_FLOAT, DT_DOUBLE, DT_STRING = 1, 2, 7  # tensorboard.DataType
# tensorboard.hparams: DataType FLOAT64 and STRING, Status SUCCESS
HP_FLOAT64, HP_STRING, HP_SUCCESS = 3, 1, 1


def _value(tag: str, body: bytes, plugin: str | None = None, content: bytes = b"") -> bytes:
    """Summary{value: [Value{tag, <body>, metadata{plugin_data{plugin_name, content}}}]}."""
    meta = b""
    if plugin is not None:
        meta = message(9, message(1, string(1, plugin) + (message(2, content) if content else b"")))
    return message(1, string(1, tag) + body + meta)


def _numbers(value, what: str) -> np.ndarray:
    """A Tensor, ndarray or real number as an array (torch's make_np: lists are refused)."""
    if isinstance(value, Tensor):
        value = value.detach().numpy()
    elif not isinstance(value, np.ndarray | np.generic | int | float):
        raise TypeError(f"{what} must be a number, a Tensor or a NumPy array, "
                        f"got {type(value).__name__}")
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{what} must hold real numbers, got dtype {arr.dtype}")
    return arr


def to_float(value, what: str = "scalar_value") -> float:
    arr = _numbers(value, what)
    if arr.size != 1:
        raise ValueError(f"{what} must hold one element, got shape {tuple(arr.shape)}")
    return float(arr.reshape(()))


def scalar(tag: str, value, new_style: bool = False, double_precision: bool = False) -> bytes:
    x = to_float(value)
    if not new_style:
        return _value(tag, float32(2, x))  # simple_value
    if double_precision:
        tensor = integer(1, DT_DOUBLE) + packed_doubles(6, [x])
    else:
        tensor = integer(1, DT_FLOAT) + message(5, float32_bytes(x))  # packed float_val
    return _value(tag, message(8, tensor), "scalars")


def text(tag: str, text_string: str) -> bytes:
    if not isinstance(text_string, str):
        raise TypeError(f"text_string must be a str, got {type(text_string).__name__}")
    shape = message(2, message(2, integer(1, 1)))  # TensorShapeProto{dim: [{size: 1}]}
    tensor = integer(1, DT_STRING) + shape + message(8, text_string.encode("utf-8"))
    return _value(tag + "/text_summary", message(8, tensor), "text")


def _default_bins() -> list[float]:
    """TensorFlow's histogram edges: +-1e-12 * 1.1**k up to 1e20, and 0 (torch's defaults)."""
    v, edges = 1e-12, []
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0.0] + edges


DEFAULT_BINS = _default_bins()


def histogram(tag: str, values, bins="tensorflow", max_bins: int | None = None) -> bytes:
    values = _numbers(values, "values").astype(np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError("add_histogram: values has no element")
    if isinstance(bins, str) and bins == "tensorflow":
        bins = DEFAULT_BINS
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:  # merge runs of `step` bins
        step = len(counts) // max_bins
        counts = np.pad(counts, (0, -len(counts) % step)).reshape(-1, step).sum(axis=1)
        limits = np.append(limits[:-1:step], limits[-1])
    filled = np.flatnonzero(counts)
    if filled.size == 0:
        raise ValueError("add_histogram: no value falls inside the bins")
    first, last = int(filled[0]), int(filled[-1])
    # TensorBoard keeps right edges only: one empty bin before the first filled one carries
    # the left edge (a zero bin is added when the first bin is filled).
    counts = counts[first - 1:last + 1] if first else np.concatenate([[0], counts[:last + 1]])
    limits = limits[first:last + 2]
    fields = [(1, values.min()), (2, values.max()), (3, values.size), (4, values.sum()),
              (5, values.dot(values))]
    histo = b"".join(double(f, x) for f, x in fields if x)  # proto3 leaves zeros out
    histo += packed_doubles(6, limits.tolist()) + packed_doubles(7, counts.tolist())
    return _value(tag, message(5, histo))


def _hparam_value(v) -> tuple[int, bytes]:
    """(HParamInfo type, google.protobuf.Value) of one hyperparameter. bool counts as a number
    (1.0/0.0), as in torch, whose number test comes first."""
    if isinstance(v, str):
        return HP_STRING, string(3, v)
    if isinstance(v, Tensor):
        v = to_float(v, "a Tensor hyperparameter")
    if isinstance(v, int | float):
        return HP_FLOAT64, double(2, float(v))
    raise ValueError(f"hyperparameter values must be int, float, str, bool or Tensor, "
                     f"got {type(v).__name__}")


def hparams(hparam_dict: dict, metric_dict: dict, domain_discrete: dict | None = None):
    """The three summaries of the hparams plugin: experiment, session start, session end."""
    if type(hparam_dict) is not dict or type(metric_dict) is not dict:
        raise TypeError("hparam_dict and metric_dict should be dictionary.")
    domain_discrete = domain_discrete or {}
    if not isinstance(domain_discrete, dict):
        raise TypeError("hparam_domain_discrete must be a dict of lists")
    for k, v in domain_discrete.items():
        if (k not in hparam_dict or not isinstance(v, list)
                or not all(isinstance(d, type(hparam_dict[k])) for d in v)):
            raise TypeError(f"hparam_domain_discrete[{k!r}] must be a list of values of the "
                            f"type of hparam_dict[{k!r}]")
    infos, start = b"", b""
    for k, v in hparam_dict.items():
        if v is None:
            continue
        kind, val = _hparam_value(v)
        start += message(1, string(1, k) + message(2, val))  # map<string, Value> entry
        info = string(1, k) + integer(4, kind)
        if k in domain_discrete and not isinstance(v, Tensor):
            info += message(5, b"".join(message(1, _hparam_value(d)[1])
                                        for d in domain_discrete[k]))
        infos += message(4, info)
    metrics = b"".join(message(5, message(1, string(2, k))) for k in metric_dict)

    def plugin(tag: str, data: bytes) -> bytes:  # HParamsPluginData, version 0 (left out)
        return _value(tag, b"", "hparams", data)

    return (plugin("_hparams_/experiment", message(2, infos + metrics)),
            plugin("_hparams_/session_start_info", message(3, start)),
            plugin("_hparams_/session_end_info", message(4, integer(1, HP_SUCCESS))))
