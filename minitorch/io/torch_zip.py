"""torch.save's zip format both ways, without torch and without running code from a file:
read_torch unpickles `<archive>/data.pkl` through allow-lists of opcodes and globals (the rule
torch.load's weights_only=True follows) and checks every storage against its archive entry
before allocating it; torch_writer writes what torch.load(weights_only=True) reads. No torch.
"""

from __future__ import annotations

import io
import math
import pickle
import reprlib
import struct
import zipfile
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from ..engine import Tensor, from_numpy
from ..nn import Parameter

# data.pkl holds the structure and scalars (the tensors live beside it): a few KB for a model,
# and what unpickling builds is proportional to it, so its size bounds that memory
MAX_PICKLE_BYTES = 16 << 20
_CHUNK = 1 << 20

# torch's storage classes -> element dtype (bfloat16 and complex have no minitorch dtype)
_STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "LongStorage": np.int64,
    "BoolStorage": np.bool_, "HalfStorage": np.float16, "IntStorage": np.int32,
    "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8,
}
_STORAGE_NAMES = {np.dtype(v): k for k, v in _STORAGE_DTYPES.items()}
_HELD = (np.float32, np.float64, np.int64, np.bool_)  # others load as minitorch.tensor casts
_DTYPE_NAMES = {  # torch.<name> dtype objects a checkpoint may hold as values
    "float32": np.float32, "float64": np.float64, "int64": np.int64, "bool": np.bool_,
    "float16": np.float16, "int32": np.int32, "int16": np.int16, "int8": np.int8,
    "uint8": np.uint8, "complex64": np.complex64, "complex128": np.complex128,
    "float": np.float32, "double": np.float64, "long": np.int64, "half": np.float16,
    "int": np.int32, "short": np.int16,
}


class _StorageType:
    """What `torch.FloatStorage` & co. unpickle to: a dtype for persistent_load."""

    def __init__(self, name: str):
        self.name, self.dtype = name, np.dtype(_STORAGE_DTYPES[name])


class _Storage:
    """One loaded storage: a flat array tensors are views of."""

    def __init__(self, array: np.ndarray):
        self.array = array


def _refuse(what: str) -> pickle.UnpicklingError:
    return pickle.UnpicklingError(
        f"refused {what} (minitorch.load, like torch.load(weights_only=True), reads tensors, "
        "numbers, strings, containers, torch.Size and dtypes; nothing in the file is run)")


# -- the globals a torch checkpoint may name, each checking its arguments' types first ----------


def _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks, metadata=None):
    """torch._utils._rebuild_tensor_v2: a strided view of storage, inside its bounds."""
    if not isinstance(storage, _Storage):
        raise _refuse("a tensor whose storage is not a persistent storage")
    dims, steps = _ints(size, "size"), _ints(stride, "stride")
    if type(offset) is not int or offset < 0 or len(dims) != len(steps) or len(dims) > 32:
        raise _refuse(f"a tensor with offset {reprlib.repr(offset)}, size {reprlib.repr(size)}, "
                      f"stride {reprlib.repr(stride)}")
    if type(requires_grad) is not bool or not isinstance(hooks, dict) or hooks or metadata:
        raise _refuse("a tensor with backward hooks or metadata")
    base = storage.array
    numel = math.prod(dims)
    last = offset + sum((n - 1) * s for n, s in zip(dims, steps))
    if numel and (last >= base.size or numel > base.size):  # (numel: no view larger than its
        raise _refuse(f"a tensor of size {tuple(dims)} stride {tuple(steps)} offset {offset} "
                      f"over a storage of {base.size:,} elements")  # storage: copies stay bounded)
    if numel:
        view = np.lib.stride_tricks.as_strided(
            base[offset:], shape=dims, strides=[s * base.itemsize for s in steps])
    else:
        view = base[:0].reshape(dims)
    out = from_numpy(view)  # shares the storage, as torch's views do
    if requires_grad:
        if out.dtype.kind != "f":
            raise _refuse(f"a {out.dtype} tensor that requires grad")
        out.requires_grad_(True)
    return out


def _rebuild_parameter(data, requires_grad, hooks):
    if not isinstance(data, Tensor) or type(requires_grad) is not bool or hooks:
        raise _refuse("a Parameter that is not a tensor with no hooks")
    return Parameter(data, requires_grad)


def _ints(value, what: str) -> list[int]:
    if type(value) not in (tuple, list) or not all(type(v) is int and v >= 0 for v in value):
        raise _refuse(f"a {what} that is not a tuple of non-negative ints: {reprlib.repr(value)}")
    return list(value)


def _size(dims=()):
    return tuple(_ints(dims, "torch.Size"))


def _of(kind, make):
    """make(arg), once arg is of one of the types `kind` (never a tensor: nothing iterates one)."""
    def build(*args):
        if len(args) > 1 or (args and type(args[0]) not in kind):
            raise _refuse(f"{make.__name__}() of {tuple(type(a).__name__ for a in args)}")
        return make(*args)
    return build


def _encode(text, encoding="latin1"):
    if type(text) is not str or encoding not in ("latin1", "latin-1"):
        raise _refuse("_codecs.encode other than bytes from latin1")
    return text.encode("latin1")


def _complex(real=0.0, imag=0.0):
    if not all(type(v) in (int, float) for v in (real, imag)):
        raise _refuse("complex() of non-numbers")
    return complex(real, imag)


def _device(kind, index=None):
    if type(kind) is not str or (index is not None and type(index) is not int):
        raise _refuse("torch.device() of non-strings")
    return kind if index is None else f"{kind}:{index}"


_GLOBALS: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): _of((list, tuple, dict), OrderedDict),
    ("collections", "Counter"): _of((dict,), Counter),
    ("builtins", "set"): _of((list, tuple), set),
    ("builtins", "frozenset"): _of((list, tuple), frozenset),
    ("builtins", "complex"): _complex,
    ("_codecs", "encode"): _encode,
    ("torch", "Size"): _size,
    ("torch", "device"): _device,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    **{("torch", k): _StorageType(k) for k in _STORAGE_DTYPES},
    **{("torch", k): v for k, v in _DTYPE_NAMES.items()},
}
# REDUCE calls only these functions (never a dtype, a class or anything else on the stack)
_CALLABLE = [v for v in _GLOBALS.values() if callable(v) and not isinstance(v, type)]


# -- the unpickler -----------------------------------------------------------------------------


class _Opcodes(dict):
    def __missing__(self, key: int):
        raise _refuse(f"pickle opcode {bytes([key])!r}")


_BASE = pickle._Unpickler  # the pure-Python unpickler: its dispatch table can be restricted
_OPCODES = (  # protocols 2-5 without INST, OBJ, NEWOBJ(_EX), EXT*, PERSID, buffers
    "PROTO FRAME STOP MARK POP POP_MARK BUILD NONE NEWTRUE NEWFALSE BININT BININT1 BININT2 LONG1 "
    "LONG4 BINFLOAT BINUNICODE SHORT_BINUNICODE BINUNICODE8 SHORT_BINSTRING BINSTRING BINBYTES "
    "SHORT_BINBYTES BINBYTES8 EMPTY_TUPLE TUPLE TUPLE1 TUPLE2 TUPLE3 EMPTY_LIST LIST APPEND "
    "APPENDS EMPTY_DICT DICT SETITEM SETITEMS EMPTY_SET ADDITEMS FROZENSET BINGET LONG_BINGET "
    "BINPUT LONG_BINPUT MEMOIZE GLOBAL STACK_GLOBAL REDUCE BINPERSID").split()


class _Unpickler(_BASE):
    """Builds only allow-listed values: unknown opcodes and globals raise before anything runs,
    and the container opcodes write into real lists, dicts and sets only (never into a tensor)."""

    dispatch = _Opcodes({getattr(pickle, k)[0]: _BASE.dispatch[getattr(pickle, k)[0]]
                         for k in _OPCODES})

    def __init__(self, data: bytes, storage):
        super().__init__(io.BytesIO(data), encoding="latin1")
        self.storage = storage

    def find_class(self, module: str, name: str) -> Any:
        if module == "__builtin__":  # protocol 2 names builtins as Python 2 did
            module = "builtins"
        found = _GLOBALS.get((module, name))
        if found is None:
            if module == "torch" and name.endswith("Storage"):
                raise _refuse(f"storage type torch.{name} (no NumPy dtype for it)")
            raise _refuse(f"global {module}.{name}")
        return found

    def persistent_load(self, pid: Any) -> Any:
        return self.storage(pid)

    def load_reduce(self):
        args, func = self.stack.pop(), self.stack[-1]
        if not any(func is f for f in _CALLABLE) or type(args) is not tuple:
            raise _refuse(f"a call of {type(func).__name__} {reprlib.repr(func)}")
        self.stack[-1] = func(*args)

    def load_build(self):
        state = self.stack.pop()  # (a state_dict's OrderedDict carries its _metadata this way)
        if (type(self.stack[-1]) is not OrderedDict or type(state) is not dict
                or not all(type(k) is str for k in state)):
            raise _refuse(f"BUILD of a {type(self.stack[-1]).__name__}")
        vars(self.stack[-1]).update(state)

    def _top(self, kind, what: str):
        if type(self.stack[-1]) not in kind:
            raise _refuse(f"{what} into a {type(self.stack[-1]).__name__}")

    def load_appends(self):
        items = self.pop_mark()
        self._top((list,), "APPENDS")
        self.stack[-1].extend(items)

    def load_append(self):
        value = self.stack.pop()
        self._top((list,), "APPEND")
        self.stack[-1].append(value)

    def load_setitems(self):
        items = self.pop_mark()
        self._top((dict, OrderedDict, Counter), "SETITEMS")
        for i in range(0, len(items) - 1, 2):
            self.stack[-1][items[i]] = items[i + 1]

    def load_setitem(self):
        value, key = self.stack.pop(), self.stack.pop()
        self._top((dict, OrderedDict, Counter), "SETITEM")
        self.stack[-1][key] = value

    def load_additems(self):
        items = self.pop_mark()
        self._top((set,), "ADDITEMS")
        self.stack[-1].update(items)

    for _name in ("reduce", "build", "append", "appends", "setitem", "setitems", "additems"):
        dispatch[getattr(pickle, _name.upper())[0]] = locals()[f"load_{_name}"]
    del _name


def read_torch(archive: zipfile.ZipFile, file_size: int) -> Any:
    """The object a torch.save zip holds.

    Raises:
        pickle.UnpicklingError: a global, opcode or value outside the allow-list.
        ValueError: a damaged archive: a storage missing or not of its declared size, ...
    """
    entries = {i.filename: i for i in archive.infolist()}
    pickles = [n for n in entries if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        raise ValueError("no <archive>/data.pkl entry: not a torch.save file")
    prefix = pickles[0][: -len("data.pkl")]
    if f"{prefix}constants.pkl" in entries:
        raise ValueError("a TorchScript archive (torch.jit.save), not a torch.save file")
    budget = [file_size]  # storages together hold no more than the file: overlapping entries

    def read(name: str, limit: int) -> bytes:
        info = entries[prefix + name]
        _check_entry(info, limit, file_size)
        return archive.read(info)

    order = read("byteorder", 16).decode("ascii") if f"{prefix}byteorder" in entries else "little"
    if order not in ("little", "big"):
        raise ValueError(f"byteorder {order!r}")
    loaded: dict[str, tuple[_Storage, _StorageType, int]] = {}

    def storage(pid: Any) -> _Storage:
        if not (type(pid) is tuple and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and type(pid[2]) is str
                and type(pid[3]) is str and type(pid[4]) is int and pid[4] >= 0):
            raise _refuse(f"persistent id {reprlib.repr(pid)}")
        _, kind, key, _location, numel = pid  # (every location loads to the CPU)
        if key in loaded:
            if loaded[key][1:] != (kind, numel):
                raise _refuse(f"storage {reprlib.repr(key)} read as two types or sizes")
            return loaded[key][0]
        name = f"{prefix}data/{key}"
        if name not in entries:
            raise ValueError(f"storage {reprlib.repr(key)} is missing from the archive")
        nbytes = numel * kind.dtype.itemsize
        info = entries[name]
        if info.file_size != nbytes:
            raise ValueError(f"storage {reprlib.repr(key)} declares {numel:,} {kind.name} elements "
                             f"({nbytes:,} bytes), its entry holds {info.file_size:,}")
        _check_entry(info, budget[0], file_size)
        budget[0] -= nbytes
        raw = np.empty(nbytes, np.uint8)
        _read_into(archive, info, memoryview(raw))
        array = raw.view(kind.dtype.newbyteorder("<" if order == "little" else ">"))
        held = kind.dtype if kind.dtype in _HELD else (np.float32 if kind.dtype.kind == "f"
                                                      else np.int64)
        loaded[key] = (_Storage(array.astype(held, copy=False)), kind, numel)
        return loaded[key][0]

    return _Unpickler(read("data.pkl", MAX_PICKLE_BYTES), storage).load()


def _check_entry(info: zipfile.ZipInfo, limit: int, file_size: int) -> None:
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"entry {info.filename} is compressed (torch.save stores entries)")
    if info.file_size > min(limit, file_size):
        raise ValueError(f"entry {info.filename} declares {info.file_size:,} bytes, more than "
                         f"{min(limit, file_size):,} it may hold")


def _read_into(archive: zipfile.ZipFile, info: zipfile.ZipInfo, out: memoryview) -> None:
    """Fill out from a stored entry in chunks (no second copy of a large storage)."""
    with archive.open(info) as fh:
        pos = 0
        while pos < len(out):
            chunk = fh.read(min(_CHUNK, len(out) - pos))
            if not chunk:
                raise EOFError(f"entry {info.filename} ends early")
            out[pos:pos + len(chunk)] = chunk
            pos += len(chunk)


# -- the writer: protocol 2 opcodes that torch's weights_only unpickler reads --------------------


def torch_writer(obj: Any) -> Callable[[BinaryIO], None]:
    """What writes obj (tensors, arrays, numbers, strings, None, dicts with string or integer
    keys, OrderedDicts, Counters, lists, tuples) to a binary file as torch.save does. obj is
    encoded here, and refused with a TypeError, before any file is touched."""
    w = _Writer()
    w.emit(obj)
    data = bytes(w.out) + pickle.STOP

    def write(f: BinaryIO) -> None:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
            _record(z, "data.pkl", data)
            _record(z, ".format_version", b"1")
            _record(z, ".storage_alignment", b"64")
            _record(z, "byteorder", b"little")
            for key, array in enumerate(w.arrays):
                _record(z, f"data/{key}", memoryview(array).cast("B"))
            _record(z, "version", b"3\n")
    return write


def _record(z: zipfile.ZipFile, name: str, data: bytes | memoryview) -> None:
    """One stored entry whose data starts at a multiple of 64 bytes, as torch aligns storages
    (padding in an extra field, torch's "FB"), so torch.load(mmap=True) can map it."""
    info = zipfile.ZipInfo(f"archive/{name}", date_time=(1980, 1, 1, 0, 0, 0))
    info.file_size = len(data)
    zip64 = len(data) * 1.05 > zipfile.ZIP64_LIMIT  # zipfile then adds its 20-byte extra
    header = 30 + len(info.filename.encode()) + 4 + (20 if zip64 else 0)
    pad = -(z.fp.tell() + header) % 64
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    with z.open(info, "w", force_zip64=zip64) as out:
        out.write(data)


class _Writer:
    def __init__(self):
        self.out = bytearray(pickle.PROTO + b"\x02")
        self.arrays: list[np.ndarray] = []
        self.keys: dict[int, tuple[str, np.ndarray]] = {}  # id(array) -> storage key: a tensor
        # saved twice (tied weights) is one storage, as torch writes it

    def emit(self, obj: Any) -> None:
        out = self.out
        if isinstance(obj, Tensor):
            self.tensor(obj.data, bool(obj.requires_grad), isinstance(obj, Parameter))
        elif isinstance(obj, np.ndarray):
            self.tensor(obj, False, False)
        elif isinstance(obj, np.generic):
            self.emit(obj.item())
        elif obj is None:
            out += pickle.NONE
        elif isinstance(obj, bool):
            out += pickle.NEWTRUE if obj else pickle.NEWFALSE
        elif isinstance(obj, int):
            if -(1 << 31) <= obj < 1 << 31:
                out += pickle.BININT + struct.pack("<i", obj)
            else:
                blob = pickle.encode_long(obj)
                if len(blob) > 255:
                    raise TypeError("save: an integer over 2,000 bits")
                out += pickle.LONG1 + bytes([len(blob)]) + blob
        elif isinstance(obj, float):
            out += pickle.BINFLOAT + struct.pack(">d", obj)
        elif isinstance(obj, str):
            blob = obj.encode("utf-8", "surrogatepass")
            out += pickle.BINUNICODE + struct.pack("<I", len(blob)) + blob
        elif isinstance(obj, dict):
            if not all(isinstance(k, (str, int)) for k in obj):
                raise TypeError("save: dict keys must be strings or integers")
            if isinstance(obj, Counter):  # Counter(dict): its own __reduce__
                self.global_("collections", "Counter")
                out += pickle.EMPTY_DICT
                self.items(obj.items(), pickle.SETITEMS)
                out += pickle.TUPLE1 + pickle.REDUCE
                return
            if isinstance(obj, OrderedDict):  # (a state_dict, as torch's)
                self.global_("collections", "OrderedDict")
                out += pickle.EMPTY_TUPLE + pickle.REDUCE
            else:
                out += pickle.EMPTY_DICT
            self.items(obj.items(), pickle.SETITEMS)
        elif isinstance(obj, list):
            out += pickle.EMPTY_LIST
            self.items(obj, pickle.APPENDS)
        elif isinstance(obj, tuple):
            out += pickle.MARK
            for v in obj:
                self.emit(v)
            out += pickle.TUPLE
        else:
            raise TypeError(f"save: cannot save a {type(obj).__name__} (tensors, arrays, "
                            "numbers, strings, None, and dicts, lists and tuples of them)")

    def items(self, items, op: bytes) -> None:
        """Dict items or list values, in MARK ... SETITEMS/APPENDS batches of 1,000."""
        batch = 0
        for item in items:
            if batch == 0:
                self.out += pickle.MARK
            for v in item if op == pickle.SETITEMS else (item,):
                self.emit(v)
            batch += 1
            if batch == 1000:
                self.out += op
                batch = 0
        if batch:
            self.out += op

    def global_(self, module: str, name: str) -> None:
        self.out += pickle.GLOBAL + f"{module}\n{name}\n".encode()

    def tensor(self, a: np.ndarray, requires_grad: bool, parameter: bool) -> None:
        """_rebuild_tensor_v2(storage, 0, shape, contiguous strides, requires_grad, hooks)."""
        if np.dtype(a.dtype).newbyteorder("=") not in _STORAGE_NAMES:
            raise TypeError(f"save: cannot save an array of dtype {a.dtype} in torch's format")
        if id(a) not in self.keys:
            flat = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).reshape(-1)
            self.keys[id(a)] = (str(len(self.arrays)), a)  # (a kept: its id stays unique)
            self.arrays.append(flat)
        key = self.keys[id(a)][0]
        strides, step = [], 1
        for n in reversed(a.shape):  # torch's contiguous strides (a 0 dimension counts as 1)
            strides.insert(0, step)
            step *= max(n, 1)
        if parameter:
            self.global_("torch._utils", "_rebuild_parameter")
            self.out += pickle.MARK
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.out += pickle.MARK + pickle.MARK
        self.emit("storage")
        self.global_("torch", _STORAGE_NAMES[np.dtype(a.dtype).newbyteorder("=")])
        for v in (key, "cpu", int(a.size)):
            self.emit(v)
        self.out += pickle.TUPLE + pickle.BINPERSID
        for v in (0, tuple(a.shape), tuple(strides), requires_grad and not parameter):
            self.emit(v)
        self.global_("collections", "OrderedDict")
        self.out += pickle.EMPTY_TUPLE + pickle.REDUCE + pickle.TUPLE + pickle.REDUCE
        if parameter:
            self.emit(bool(requires_grad))
            self.global_("collections", "OrderedDict")
            self.out += pickle.EMPTY_TUPLE + pickle.REDUCE + pickle.TUPLE + pickle.REDUCE
