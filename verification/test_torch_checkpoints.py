"""Checkpoints both ways: minitorch.load reads what torch.save wrote (state_dicts of every dtype,
views and shared storages, 0-d tensors, nested training checkpoints) and torch.load(weights_only=
True) reads what minitorch.save(format="torch") wrote; a model crosses with identical outputs.
Hostile files (code-running globals, forged storages and shapes, damaged archives) are refused in
one line naming the file, with nothing run (a marker file the payload would create) and memory
bounded (tracemalloc)."""

from __future__ import annotations

import collections
import io
import os
import pickle
import struct
import subprocess
import sys
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest

import minitorch as mt
from minitorch.io.serialization import LoadError

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

_NP = {torch.float32: np.float32, torch.float64: np.float64, torch.int64: np.int64,
       torch.bool: np.bool_, torch.float16: np.float16, torch.int32: np.int32}


def _same(mine, theirs, where="obj"):
    """mine (minitorch.load) is theirs (torch.load): types, keys, values, dtypes, shapes."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(mine, mt.Tensor), where
        want = theirs.detach().numpy()
        assert mine.shape == tuple(theirs.shape) and mine.dtype == want.dtype, where
        assert mine.requires_grad == theirs.requires_grad, where
        np.testing.assert_array_equal(mine.detach().numpy(), want, err_msg=where)
    elif isinstance(theirs, torch.dtype):
        assert mine is _NP[theirs], where
    elif isinstance(theirs, dict):
        assert type(mine) is type(theirs) and list(mine) == list(theirs), where
        for k in theirs:
            _same(mine[k], theirs[k], f"{where}[{k!r}]")
    elif isinstance(theirs, (list, tuple)):  # (torch.Size loads as a tuple: minitorch's shape)
        want_type = tuple if isinstance(theirs, torch.Size) else type(theirs)
        assert type(mine) is want_type and len(mine) == len(theirs), where
        for i, (a, b) in enumerate(zip(mine, theirs)):
            _same(a, b, f"{where}[{i}]")
    else:
        assert type(mine) is type(theirs) and mine == theirs, where


def _torch_saved(obj, tmp_path, name="ck.pt"):
    path = tmp_path / name
    torch.save(obj, path)
    return path


# -- torch.save -> minitorch.load ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool])
def test_torch_state_dict_of_each_dtype_loads(tmp_path, dtype):
    g = torch.Generator().manual_seed(0)
    sd = collections.OrderedDict(
        w=(torch.randn(3, 4, generator=g) * 5).to(dtype), b=(torch.randn(4, generator=g) > 0)
        .to(dtype), scalar=torch.tensor(2).to(dtype), empty=torch.zeros(0, 3, dtype=dtype))
    path = _torch_saved(sd, tmp_path)
    _same(mt.load(path), torch.load(path, weights_only=True))


def test_views_offsets_and_shared_storage_load_as_torch_has_them(tmp_path):
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    views = {"base": base, "t": base.t(), "cols": base[1:3, ::2], "row": base[2],
             "elem": base[3, 5], "expanded": torch.arange(6.0)[None].expand(1, 6)}
    assert views["row"].storage_offset() == 12 and not views["cols"].is_contiguous()
    path = _torch_saved(views, tmp_path)
    got, want = mt.load(path), torch.load(path, weights_only=True)
    _same(got, want)
    arrays = {k: v.detach().numpy() for k, v in got.items()}
    for k in ("t", "cols", "row", "elem"):  # one storage, as torch keeps it
        assert np.shares_memory(arrays["base"], arrays[k]), k
    got["base"].detach().numpy()[2, 0] = -1.0
    assert arrays["row"][0] == -1.0 and arrays["t"][0, 2] == -1.0


def test_zero_d_and_other_dtypes_load(tmp_path):
    obj = {"f": torch.tensor(3.5), "i": torch.tensor(7), "b": torch.tensor(True),
           "grad": torch.tensor([1.0, 2.0], requires_grad=True)}
    path = _torch_saved(obj, tmp_path)
    _same(mt.load(path), torch.load(path, weights_only=True))
    half = _torch_saved({"h": torch.tensor([1.5, -2.0], dtype=torch.float16),
                         "i32": torch.tensor([1, 2], dtype=torch.int32)}, tmp_path, "half.pt")
    got = mt.load(half)  # as minitorch.tensor casts them: float16 -> float32, int32 -> int64
    assert got["h"].dtype == np.float32 and got["h"].tolist() == [1.5, -2.0]
    assert got["i32"].dtype == np.int64 and got["i32"].tolist() == [1, 2]


def test_a_big_endian_archive_is_swapped(tmp_path):
    """torch writes its host's byte order in `byteorder`; a big-endian machine's file loads."""
    want = torch.linspace(-3, 3, 7, dtype=torch.float64)
    path = _torch_saved({"w": want}, tmp_path)
    with zipfile.ZipFile(path) as z:
        entries = {i.filename: z.read(i) for i in z.infolist()}
    for name in entries:
        if name.endswith("/byteorder"):
            entries[name] = b"big"
        if name.endswith("/data/0"):
            entries[name] = np.frombuffer(entries[name], "<f8").astype(">f8").tobytes()
    with zipfile.ZipFile(tmp_path / "big.pt", "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    got = mt.load(tmp_path / "big.pt")["w"]
    assert got.dtype == np.float64 and got.tolist() == want.tolist()


def _torch_training_checkpoint():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    model(torch.randn(5, 3)).square().mean().backward()
    opt.step()
    return {"model": model.state_dict(), "optimizer": opt.state_dict(),
            "model_args": {"n_layer": 2, "bias": True, "dropout": 0.0, "dims": [3, 4, 2]},
            "iter_num": 1000, "best_val_loss": 1.4721, "shape": torch.Size([5, 3]),
            "dtype": torch.float64, "note": "nanoGPT's layout", "steps": (1, 2.5, None)}


def test_nested_training_checkpoint_loads(tmp_path):
    path = _torch_saved(_torch_training_checkpoint(), tmp_path)
    got, want = mt.load(path), torch.load(path, weights_only=True)
    _same(got, want)
    assert got["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.95)
    assert got["optimizer"]["state"][0]["exp_avg"].shape == (4, 3)


def _mlp(lib, dtype):
    lib.manual_seed(1)
    return lib.nn.Sequential(lib.nn.Linear(3, 8), lib.nn.Tanh(), lib.nn.Linear(8, 2)).to(dtype)


def test_a_model_crosses_both_ways_with_identical_outputs(tmp_path):
    x = np.linspace(-2, 2, 15).reshape(5, 3)
    theirs = _mlp(torch, torch.float64)
    torch.save(theirs.state_dict(), tmp_path / "torch.pt")
    mine = _mlp(mt, mt.float64)
    mine.load_state_dict(mt.load(tmp_path / "torch.pt"))
    want = theirs(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(mine(mt.tensor(x)).detach().numpy(), want, rtol=1e-12, atol=0)

    mine = _mlp(mt, mt.float64)
    with mt.no_grad():
        for p in mine.parameters():
            p.mul_(-0.5)  # other weights than torch's twin has
    mt.save(mine.state_dict(), tmp_path / "mine.pt", format="torch")
    theirs.load_state_dict(torch.load(tmp_path / "mine.pt", weights_only=True))
    np.testing.assert_allclose(theirs(torch.from_numpy(x)).detach().numpy(),
                               mine(mt.tensor(x)).detach().numpy(), rtol=1e-12, atol=0)


# -- minitorch.save(format="torch") -> torch.load(weights_only=True) ------------------------------


def _mt_checkpoint():
    mt.manual_seed(0)
    model = mt.nn.Sequential(mt.nn.Linear(3, 4), mt.nn.ReLU(), mt.nn.Linear(4, 2))
    opt = mt.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95))
    opt.zero_grad()
    model(mt.randn(5, 3)).square().mean().backward()
    opt.step()
    return {"model": collections.OrderedDict(model.state_dict()), "optimizer": opt.state_dict(),
            "f64": mt.randn(2, 2, dtype=mt.float64), "i64": mt.tensor([[1, -2], [3, 2**40]]),
            "bool": mt.tensor([True, False]), "zero_d": mt.tensor(2.5), "empty": mt.zeros(0, 3),
            "grad": mt.tensor([1.0], requires_grad=True), "view": mt.arange(12.0).reshape(3, 4).T,
            "counts": collections.Counter({2: 1, 4: 2}), "iter_num": 7, "best_val_loss": 1.25,
            "big": 2**70, "inf": float("inf"), "cfg": {"dims": [3, 4], "name": "é", "t": (1, None)}}


def _as_numpy(obj):
    """minitorch's checkpoint as torch.load should return it, compared through NumPy."""
    if isinstance(obj, mt.Tensor):
        return ("tensor", obj.detach().numpy(), obj.requires_grad)
    if isinstance(obj, np.ndarray):
        return ("tensor", obj, False)
    if isinstance(obj, torch.Tensor):
        return ("tensor", obj.detach().numpy(), obj.requires_grad)
    if isinstance(obj, dict):
        return (type(obj), [(k, _as_numpy(v)) for k, v in obj.items()])
    if isinstance(obj, (list, tuple)):
        return (type(obj), [_as_numpy(v) for v in obj])
    return (type(obj), obj)


def _assert_tree_equal(a, b, where="obj"):
    if a[0] == "tensor":
        assert b[0] == "tensor" and a[1].dtype == b[1].dtype and a[2] == b[2], where
        np.testing.assert_array_equal(a[1], b[1], err_msg=where)
        return
    assert a[0] is b[0], where
    if a[0] in (list, tuple) or issubclass(a[0], dict):
        assert len(a[1]) == len(b[1]), where
        for i, (x, y) in enumerate(zip(a[1], b[1])):
            if issubclass(a[0], dict):
                assert x[0] == y[0], where
                x, y = x[1], y[1]
            _assert_tree_equal(x, y, f"{where}[{i}]")
    else:
        assert a[1] == b[1], where


@pytest.mark.parametrize("mmap", [False, True])
def test_torch_loads_what_minitorch_saves(tmp_path, mmap):
    ck = _mt_checkpoint()
    mt.save(ck, tmp_path / "ck.pt", format="torch")
    got = torch.load(tmp_path / "ck.pt", weights_only=True, mmap=mmap)
    _assert_tree_equal(_as_numpy(got), _as_numpy(ck))
    assert got["view"].shape == (4, 3) and got["view"].is_contiguous()
    again = mt.load(tmp_path / "ck.pt")  # and minitorch reads its own torch-format file
    _assert_tree_equal(_as_numpy(again), _as_numpy(got))
    with zipfile.ZipFile(tmp_path / "ck.pt") as z:  # storages 64-byte aligned, as torch's
        for info in z.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            start = info.header_offset + 30 + len(info.filename) + len(info.extra)
            assert start % 64 == 0, info.filename


def test_tied_tensors_are_one_storage_in_torch(tmp_path):
    w = mt.randn(3, 3)
    mt.save({"wte": w, "lm_head": w}, tmp_path / "tied.pt", format="torch")
    got = torch.load(tmp_path / "tied.pt", weights_only=True)
    assert got["wte"].untyped_storage().data_ptr() == got["lm_head"].untyped_storage().data_ptr()


def test_torch_format_refuses_what_it_cannot_write_before_touching_the_file(tmp_path):
    path = tmp_path / "ck.pt"
    mt.save({"v": mt.tensor([1.0])}, path, format="torch")
    for bad, msg in (({"x": object()}, "cannot save a object"),
                     ({"a": np.ones(2, np.uint16)}, "dtype uint16"),
                     ({(1, 2): 1}, "keys must be strings or integers")):
        with pytest.raises(TypeError, match=msg):
            mt.save(bad, path, format="torch")
    assert torch.load(path, weights_only=True)["v"].tolist() == [1.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.pt"]
    with pytest.raises(ValueError, match="format must be one of"):
        mt.save({}, path, format="pickle")


# -- hostile and damaged files --------------------------------------------------------------------


def _zip(path, pickled: bytes, storages: dict[str, bytes] | None = None,
         compress=zipfile.ZIP_STORED):
    """A torch.save-shaped archive with the given data.pkl and storages."""
    with zipfile.ZipFile(path, "w", compress) as z:
        z.writestr("archive/data.pkl", pickled)
        z.writestr("archive/byteorder", "little")
        for key, blob in (storages or {}).items():
            z.writestr(f"archive/data/{key}", blob)
        z.writestr("archive/version", "3\n")
    return path


class _Payload:
    """Pickles as a call of `func(*args)`: the classic code-execution payload."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _tensor_pickle(numel_declared: int, size: tuple, key: str = "0", name: str = "w") -> bytes:
    """data.pkl for {name: tensor} over FloatStorage `key`, written opcode by opcode."""
    return b"\x80\x02}(" + _tensor_item(numel_declared, size, key, name) + b"u."


def _tensor_item(numel_declared: int, size: tuple, key: str, name: str) -> bytes:
    def tup(values):
        return b"(" + b"".join(b"J" + v.to_bytes(4, "little", signed=True) if v < 2**31 else
                                b"\x8a\x08" + v.to_bytes(8, "little") for v in values) + b"t"

    def text(value: str):
        return b"X" + len(value).to_bytes(4, "little") + value.encode()
    strides = [1] * len(size)
    for i in range(len(size) - 2, -1, -1):
        strides[i] = strides[i + 1] * size[i + 1]
    return (text(name) + b"ctorch._utils\n_rebuild_tensor_v2\n((" + text("storage")
            + b"ctorch\nFloatStorage\n" + text(key) + text("cpu") + tup([numel_declared])[1:-1]
            + b"tQJ\x00\x00\x00\x00" + tup(size) + tup(strides)
            + b"\x89ccollections\nOrderedDict\n)RtR")


def _hostile(tmp_path, marker):
    """name -> (file, the refusal the message names)."""
    cmd = f"touch {marker}"
    code = f"open({str(marker)!r}, 'w').close()"
    good = tmp_path / "good.pt"
    torch.save({"w": torch.arange(6.0)}, good)
    blob = good.read_bytes()
    with zipfile.ZipFile(good) as z:
        entries = {i.filename: z.read(i) for i in z.infolist()}
    prefix = next(n for n in entries if n.endswith("data.pkl"))[: -len("data.pkl")]
    storage = entries[prefix + "data/0"]

    def rezip(name, drop=(), compress=zipfile.ZIP_STORED):
        path = tmp_path / name
        with zipfile.ZipFile(path, "w", compress) as z:
            for n, data in entries.items():
                if n not in drop:
                    z.writestr(n, data)
        return path

    cases = {
        "os_system": (pickle.dumps(_Payload(os.system, cmd), protocol=2), "global posix.system"),
        "os_system_by_hand": (b"\x80\x02cos\nsystem\nX" + len(cmd).to_bytes(4, "little")
                              + cmd.encode() + b"\x85R.", "global os.system"),
        "eval": (pickle.dumps(_Payload(eval, code), protocol=2), "global builtins.eval"),
        "exec_proto4": (pickle.dumps(_Payload(exec, code), protocol=4), "global builtins.exec"),
        "subprocess": (pickle.dumps(_Payload(subprocess.call, ["touch", str(marker)]),
                                    protocol=3), "global subprocess.call"),
        "inst": (b"(X" + len(cmd).to_bytes(4, "little") + cmd.encode() + b"ios\nsystem\n.",
                 "pickle opcode b'i'"),
        "reduce_on_a_dtype": (b"\x80\x02ctorch\nfloat32\nX\x01\x00\x00\x001\x85R.",
                              "a call of type"),
        "reduce_on_a_string": (b"\x80\x02X\x01\x00\x00\x00a)R.", "a call of str"),
        "build_a_list": (b"\x80\x02]}b.", "BUILD of a list"),
        "setitem_into_a_tensor": (_tensor_pickle(6, (6,))[:-2] + b"X\x01\x00\x00\x00kKds.",
                                  "SETITEM into a Tensor"),
    }
    files = {name: (_zip(tmp_path / f"{name}.pt", pickled, {"0": storage}), why)
             for name, (pickled, why) in cases.items()}
    files["storage_missing"] = (rezip("missing.pt", drop=(prefix + "data/0",)),
                                "storage '0' is missing")
    files["storage_larger_than_entry"] = (
        _zip(tmp_path / "larger.pt", _tensor_pickle(10**9, (10**9,)), {"0": storage}),
        "declares 1,000,000,000 FloatStorage elements (4,000,000,000 bytes), its entry holds 24")
    files["huge_shape"] = (_zip(tmp_path / "shape.pt", _tensor_pickle(6, (10**6, 10**6)),
                                {"0": storage}), "a tensor of size (1000000, 1000000)")
    files["compressed"] = (rezip("deflated.pt", compress=zipfile.ZIP_DEFLATED), "is compressed")
    files["truncated"] = (tmp_path / "truncated.pt", "is not a file")
    files["truncated"][0].write_bytes(blob[: len(blob) // 2])
    files["torchscript"] = (_zip(tmp_path / "ts.pt", b"\x80\x02N."), "TorchScript")
    with zipfile.ZipFile(files["torchscript"][0], "a") as z:
        z.writestr("archive/constants.pkl", b"\x80\x02).")
    files["not_a_zip"] = (tmp_path / "raw.pt", "is not a file minitorch.save or torch.save")
    files["not_a_zip"][0].write_bytes(pickle.dumps(_Payload(os.system, cmd)))
    return files


HOSTILE = ["os_system", "os_system_by_hand", "eval", "exec_proto4", "subprocess", "inst",
           "reduce_on_a_dtype", "reduce_on_a_string", "build_a_list", "setitem_into_a_tensor",
           "storage_missing", "storage_larger_than_entry", "huge_shape", "compressed",
           "truncated", "torchscript", "not_a_zip"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_files_are_refused_in_one_line_and_run_nothing(tmp_path, name):
    marker = tmp_path / "PWNED"
    files = _hostile(tmp_path, marker)
    assert sorted(files) == sorted(HOSTILE)
    path, why = files[name]
    error = None
    tracemalloc.start()
    try:
        mt.load(path)
    except LoadError as e:
        error = e
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert not marker.exists(), f"{name} ran its payload"
    assert error is not None, "loaded"
    msg = str(error)
    assert why in msg and str(path) in msg and "\n" not in msg, msg
    assert isinstance(error, ValueError) and isinstance(error, pickle.PickleError)
    assert peak < 4 << 20, peak  # nothing sized by a forged declaration


def test_a_hostile_file_object_is_refused_the_same_way(tmp_path):
    files = _hostile(tmp_path, tmp_path / "PWNED")
    with open(files["eval"][0], "rb") as f:
        with pytest.raises(LoadError, match="global builtins.eval"):
            mt.load(f)
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.filterwarnings("ignore:Detected pickle protocol 3")
def test_torch_refuses_the_code_running_payloads_too(tmp_path):
    """The rule read here is torch's weights_only rule: torch refuses the same globals."""
    marker = tmp_path / "PWNED"
    files = _hostile(tmp_path, marker)
    for name in ("os_system", "eval", "subprocess"):
        with pytest.raises(pickle.UnpicklingError):
            torch.load(files[name][0], weights_only=True)
    assert not marker.exists()


def test_the_marker_would_be_made_if_the_payload_ran(tmp_path):
    """The control for the checks above: unpickled without the allow-list, a payload does run."""
    marker = tmp_path / "PWNED"
    payload = pickle.dumps(_Payload(subprocess.call, [sys.executable, "-c",
                                                      f"open({str(marker)!r}, 'w')"]))
    pickle.loads(payload)
    assert marker.exists()


def _local(name: bytes, data: bytes) -> bytes:
    return struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0, zlib.crc32(data), len(data),
                       len(data), len(name), 0) + name


def _central(name: bytes, data: bytes, offset: int) -> bytes:
    return struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, zlib.crc32(data),
                       len(data), len(data), len(name), 0, 0, 0, 0, 0, offset) + name


def test_overlapping_entries_allocate_no_more_than_the_file(tmp_path):
    """Storage 0's stored bytes hold storage 1's whole entry (an overlapping zip, as in stored
    zip bombs): each entry is valid, but together they declare more than the file holds."""
    m = 1 << 20
    d = bytes(4 * m)
    name0, name1 = b"archive/data/0", b"archive/data/1"
    inner = _local(name1, d) + d
    pkl = (b"\x80\x02}(" + _tensor_item(len(inner) // 4, (len(inner) // 4,), "0", "a")
           + _tensor_item(m, (m,), "1", "b") + b"u.")
    head = _local(b"archive/data.pkl", pkl) + pkl
    body = head + _local(name0, inner) + inner
    offsets = {b"archive/data.pkl": (0, pkl), name0: (len(head), inner),
               name1: (len(head) + 30 + len(name0), d)}
    cd = b"".join(_central(n, data, off) for n, (off, data) in offsets.items())
    eocd = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 3, 3, len(cd), len(body), 0)
    path = tmp_path / "overlap.pt"
    path.write_bytes(body + cd + eocd)
    with zipfile.ZipFile(path) as z:  # both entries read as valid on their own
        assert len(z.read(name0.decode())) == len(inner) and z.read(name1.decode()) == d
    with pytest.raises(LoadError, match="entry archive/data/1 declares 4,194,304 bytes, more"):
        mt.load(path)


def test_weights_only_and_map_location_as_torch_scripts_pass_them(tmp_path):
    path = _torch_saved({"w": torch.ones(2)}, tmp_path)
    for kwargs in ({"map_location": "cpu"}, {"weights_only": True}, {"weights_only": False},
                   {"map_location": lambda storage, loc: storage}):
        assert mt.load(path, **kwargs)["w"].tolist() == [1.0, 1.0]
    buf = io.BytesIO(path.read_bytes())
    assert mt.load(buf)["w"].tolist() == [1.0, 1.0]
