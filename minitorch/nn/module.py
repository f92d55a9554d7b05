"""Module and Parameter, and the containers ModuleList, Sequential, ModuleDict (torch.nn names).

A Module finds its parameters, buffers and submodules from its attributes, in assignment order,
so names are stable ("h.0.attn.c_attn.weight") and compare with torch by name; containers keep
theirs in `_modules`, by key. `flatten_parameters()` lays parameters out in one buffer per dtype
(flat.py); names stay as they are. Nothing here draws random numbers or builds a graph.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import NamedTuple

import numpy as np

from ..engine import Tensor
from ..engine.dtypes import parse_to
from ..engine.node import inplace
from . import flat


class Parameter(Tensor):
    """A leaf Tensor that requires grad and is registered by the Module that holds it."""

    def __init__(self, data, requires_grad: bool = True):
        super().__init__(data.data if isinstance(data, Tensor) else data)
        self.requires_grad_(requires_grad)


class Module:
    """Base class of layers: attributes that are Parameters or Modules are registered in order,
    and Tensors given to register_buffer are buffers (state, not parameters)."""

    training: bool = True

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, module) of each direct submodule in assignment order, each module once; a
        list or tuple attribute of modules gives the names "attr.0", "attr.1", ..."""
        seen: set[int] = set()
        for name, value in vars(self).items():
            for i, m in _modules_in(value):
                if id(m) not in seen:
                    seen.add(id(m))
                    yield (name if i is None else f"{name}.{i}"), m

    def children(self) -> Iterator[Module]:
        return (m for _, m in self.named_children())

    def named_modules(self, memo: set[int] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """(dotted name, module) for self (named `prefix`) and every submodule, depth first in
        assignment order; a module reached twice is listed once, under its first name (torch)."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self.named_children():
            yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                       remove_duplicate)

    def modules(self) -> Iterator[Module]:
        return (m for _, m in self.named_modules())

    def named_parameters(self, prefix: str = "",
                         recurse: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter), module by module in named_modules order; a tied parameter
        is listed once, under its first name (torch's remove_duplicate)."""
        return self._named_members(_own_parameters, prefix, recurse)

    def parameters(self, recurse: bool = True) -> list[Parameter]:
        return [p for _, p in self.named_parameters(recurse=recurse)]

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Register module state that is not a parameter (a causal mask, a running mean), as
        torch: it is the attribute `name`, listed by named_buffers, cast by `to` if floating,
        and, if persistent, saved by state_dict and restored by load_state_dict.

        Args:
            name: the attribute name: a non-empty string without ".", not an existing attribute
                (re-registering a buffer replaces it).
            tensor: a Tensor of any shape, or None (then listed nowhere until one is assigned).
            persistent: whether state_dict includes it.
        """
        owner = f"{type(self).__name__}.register_buffer"
        _check_name(owner, "buffer", name)
        if hasattr(self, name) and name not in vars(self).get("_buffer_persistent", {}):
            raise KeyError(f"{owner}: attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"{owner}: cannot assign a {type(tensor).__name__} to buffer "
                            f"'{name}' (a Tensor or None is required)")
        vars(self).setdefault("_buffer_persistent", {})[name] = bool(persistent)
        setattr(self, name, tensor)  # a later `self.name = t` replaces the buffer, as torch

    def named_buffers(self, prefix: str = "",
                      recurse: bool = True) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, buffer) of every registered buffer that is not None, persistent or
        not, module by module in named_modules order, each tensor once."""
        return self._named_members(_own_buffers, prefix, recurse)

    def buffers(self, recurse: bool = True) -> list[Tensor]:
        return [b for _, b in self.named_buffers(recurse=recurse)]

    def _named_members(self, members: Callable, prefix: str, recurse: bool,
                       remove_duplicate: bool = True) -> Iterator:
        """(dotted name, tensor) for members(m) of self and (recurse) every submodule; a
        tensor held twice (tied weights) is listed once, under its first name, unless
        remove_duplicate is False (then under every name it has, as torch's state_dict)."""
        seen: set[int] = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else iter([(prefix, self)]))
        for mprefix, m in modules:
            for name, t in members(m):
                if id(t) not in seen or not remove_duplicate:
                    seen.add(id(t))
                    yield (f"{mprefix}.{name}" if mprefix else name), t

    def apply(self, fn: Callable[[Module], object]) -> Module:
        """Call fn(m) on every submodule, children before their parent and self last, as torch
        (`model.apply(init_weights)`); returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Set every parameter's `.grad` to None (torch's default), or to zeros in place."""
        flat.zero_grad(self.parameters(), set_to_none)

    def flatten_parameters(self) -> None:
        """Pack the parameters, in named_parameters order, into one contiguous buffer per dtype
        and make each `p.data` its view (values, names and shapes unchanged), so optimizers,
        clipping and zero_grad work on whole buffers."""
        flat.flatten(self.parameters())

    def train(self, mode: bool = True) -> Module:
        for _, m in self.named_modules():
            m.training = mode
        return self

    def eval(self) -> Module:
        return self.train(False)

    def float(self) -> Module:
        return self.to(np.float32)

    def double(self) -> Module:
        return self.to(np.float64)

    def cpu(self) -> Module:
        return self

    def to(self, *args, dtype=None, device=None) -> Module:
        """Cast every parameter and floating buffer to a dtype in place (float32 or float64;
        torch's `.to` arguments, 'cpu' accepted); flattened parameters are flattened again in
        the new dtype."""
        dtype = parse_to(*args, dtype=dtype, device=device)
        if dtype is None:
            return self
        if dtype not in (np.float32, np.float64):  # as torch: parameters stay floating
            raise TypeError(f"Module.to: only floating dtypes are accepted, got {dtype}")
        params = self.parameters()
        for p in params:
            p.data = p.data.astype(dtype)
        for b in self.buffers():
            if b.dtype.kind == "f":  # as torch: integer and bool buffers keep their dtype
                b.data = b.data.astype(dtype)
        flat.zero_grad(params)
        if any(p._flat is not None for p in params):
            self.flatten_parameters()
        return self

    def state_dict(self) -> dict[str, np.ndarray]:
        """Name -> a copy of its array: each module's parameters, then its persistent buffers,
        module by module in named_modules order; a tied or shared tensor is listed under every
        name it has (torch's keys, so either library's strict load accepts the other's)."""
        members = self._named_members(_own_state, "", True, remove_duplicate=False)
        return {name: t.data.copy() for name, t in members}

    def load_state_dict(self, state: Mapping, strict: bool = True) -> IncompatibleKeys:
        """Copy arrays into the parameters' and persistent buffers' own arrays (in place, as
        torch's `copy_`, so flat storage stays flat); values are cast to each tensor's dtype
        (as torch does). With strict (the default) the names must match exactly; without it
        only the names present on both sides are copied. Shapes must match. A mismatch raises
        before anything is copied. Returns torch's (missing_keys, unexpected_keys) pair."""
        targets = dict(self._named_members(_own_state, "", True, remove_duplicate=False))
        missing, unexpected = sorted(set(targets) - set(state)), sorted(set(state) - set(targets))
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        targets = {name: t for name, t in targets.items() if name in state}
        values = {name: np.asarray(state[name]) for name in targets}
        for name, t in targets.items():
            if values[name].shape != t.shape:
                raise ValueError(
                    f"load_state_dict: '{name}' has shape {values[name].shape}, expected {t.shape}"
                )
        for name, t in targets.items():
            value = values[name]
            with inplace(t.data) as dst:  # a retained graph that saved it then raises
                if dst.flags.writeable:
                    np.copyto(dst, value, casting="unsafe")
                    continue
            t.data = value.astype(t.dtype, copy=True)  # a read-only array a user gave: replaced
        return IncompatibleKeys(missing, unexpected)


class IncompatibleKeys(NamedTuple):
    """What load_state_dict returns, as torch's: the names it did not find and did not use."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _own_parameters(m: Module) -> Iterator[tuple[str, Parameter]]:
    """m's own Parameter attributes, in assignment order (one registered as a buffer is not)."""
    buffers = vars(m).get("_buffer_persistent", {})
    return ((n, v) for n, v in vars(m).items() if isinstance(v, Parameter) and n not in buffers)


def _own_buffers(m: Module, persistent_only: bool = False) -> Iterator[tuple[str, Tensor]]:
    """m's own registered buffers that are not None, in registration order."""
    for name, persistent in vars(m).get("_buffer_persistent", {}).items():
        value = vars(m).get(name)  # None if assigned None or deleted
        if value is None or (persistent_only and not persistent):
            continue
        if not isinstance(value, Tensor):
            raise TypeError(f"{type(m).__name__}: buffer '{name}' holds a "
                            f"{type(value).__name__}; a buffer must be a Tensor or None")
        yield name, value


def _own_state(m: Module) -> Iterator[tuple[str, Tensor]]:
    """m's own state_dict entries, in torch's order: parameters, then persistent buffers."""
    yield from _own_parameters(m)
    yield from _own_buffers(m, persistent_only=True)


def _modules_in(value) -> Iterator[tuple[int | None, Module]]:
    if isinstance(value, Module):
        yield None, value
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if isinstance(v, Module):
                yield i, v


def _check_name(owner: str, kind: str, name) -> None:
    """torch's rule for a buffer or submodule name: a non-empty string without '.'."""
    if not isinstance(name, str):
        raise TypeError(f"{owner}: {kind} name should be a string, got {type(name).__name__}")
    if not name or "." in name:
        raise KeyError(f"{owner}: {kind} name must be non-empty and contain no '.', got {name!r}")


class _Container(Module):
    """Submodules kept by name in `_modules` (insertion order), named by their keys and
    reachable as attributes too (`transformer.wte`), as in torch."""

    _modules: dict[str, Module]

    def _add(self, name: str, module: Module) -> None:
        owner = type(self).__name__
        _check_name(owner, "module", name)
        if not isinstance(module, Module):
            raise TypeError(f"{owner}: '{name}' is a {type(module).__name__}, not a Module")
        if name not in self._modules and hasattr(self, name):
            raise KeyError(f"{owner}: attribute '{name}' already exists")
        self._modules[name] = module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, m in self._modules.items():
            if id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def _pick(self, i):
        """The module at integer index i, or the (name, module) pairs of slice i."""
        items = list(self._modules.items())
        if isinstance(i, slice):
            return items[i]
        try:
            i = operator.index(i)
        except TypeError:
            raise TypeError(f"{type(self).__name__} indices must be integers or slices, not "
                            f"{type(i).__name__}") from None
        if not -len(items) <= i < len(items):
            raise IndexError(f"{type(self).__name__}: index {i} is out of range for length "
                             f"{len(items)}")
        return items[i][1]

    def __len__(self) -> int:
        return len(self._modules)

    def __getattr__(self, name: str):
        modules = self.__dict__.get("_modules")  # not self._modules: copy/pickle probe early
        if modules is not None and name in modules:
            return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


class ModuleList(_Container):
    """A list of submodules, named by index (h.0, h.1, ...).

    Args:
        modules: an iterable of Modules (default: none; add more with append/extend).
    """

    def __init__(self, modules: Iterable[Module] | None = None):
        self._modules = {}
        self.extend(modules if modules is not None else ())

    def append(self, module: Module) -> ModuleList:
        self._add(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, i):
        got = self._pick(i)
        return ModuleList(m for _, m in got) if isinstance(i, slice) else got


class Sequential(_Container):
    """Modules called in order, each on the previous one's output (torch.nn.Sequential).

    Args:
        *args: Modules, named "0", "1", ...; or one OrderedDict of name -> Module.
    """

    def __init__(self, *args):
        self._modules = {}
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self._add(name, m)
        else:
            for i, m in enumerate(args):
                self._add(str(i), m)

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input

    def append(self, module: Module) -> Sequential:
        self._add(str(len(self)), module)
        return self

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, i):
        """The module at index i; a slice gives a Sequential that keeps the names (torch)."""
        got = self._pick(i)
        return Sequential(OrderedDict(got)) if isinstance(i, slice) else got


class ModuleDict(_Container):
    """Submodules by string key, in insertion order: parameters are named "key.weight" ...
    (torch.nn.ModuleDict); iterating gives the keys.

    Args:
        modules: a mapping of key -> Module, or an iterable of (key, Module) pairs.
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None):
        self._modules = {}
        if modules is not None:
            self.update(modules)

    def update(self, modules: Mapping[str, Module] | Iterable) -> None:
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for j, pair in enumerate(pairs):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise TypeError(f"ModuleDict.update: element {j} should be a (key, module) "
                                f"pair, got {type(pair).__name__}")
            self[pair[0]] = pair[1]

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self._add(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()
