"""Module and Parameter: the containers every layer is built from (torch.nn API names).

A Module finds its parameters and submodules from its attributes, in assignment order, so
parameter names are stable ("h.0.attn.c_attn.weight") and compare with torch by name.
`flatten_parameters()` lays them out in one buffer per dtype (flat.py); names stay as they are.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..engine import Tensor
from ..engine.registry import inplace
from . import flat


class Parameter(Tensor):
    """A leaf Tensor that requires grad and is registered by the Module that holds it."""

    def __init__(self, data, requires_grad: bool = True):
        super().__init__(data.data if isinstance(data, Tensor) else data)
        self.requires_grad_(requires_grad)


class Module:
    """Base class of layers: attributes that are Parameters or Modules are registered in order."""

    training: bool = True

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        yield prefix, self
        for name, value in vars(self).items():
            for i, m in _modules_in(value):
                full = f"{prefix}.{name}" if prefix else name
                yield from m.named_modules(full if i is None else f"{full}.{i}")

    def named_parameters(self) -> Iterator[tuple[str, Parameter]]:
        seen: set[int] = set()
        for mprefix, m in self.named_modules():
            for name, value in vars(m).items():
                if isinstance(value, Parameter) and id(value) not in seen:
                    seen.add(id(value))  # tied weights are listed once, under their first name
                    yield (f"{mprefix}.{name}" if mprefix else name), value

    def parameters(self) -> list[Parameter]:
        return [p for _, p in self.named_parameters()]

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def zero_grad(self) -> None:
        """Set every parameter's `.grad` to None (torch's set_to_none)."""
        flat.zero_grad(self.parameters())

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

    def to(self, dtype) -> Module:
        """Cast every parameter to `dtype` in place (float32 or float64); flattened parameters
        are flattened again in the new dtype."""
        params = self.parameters()
        for p in params:
            p.data = p.data.astype(dtype)
        flat.zero_grad(params)
        if any(p._flat is not None for p in params):
            self.flatten_parameters()
        return self

    def state_dict(self) -> dict[str, np.ndarray]:
        """Parameter name -> a copy of its array."""
        return {name: p.data.copy() for name, p in self.named_parameters()}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Copy arrays into the parameters' own arrays (in place, as torch's `param.copy_`, so
        flat storage stays flat); names and shapes must match exactly, and values are cast to
        each parameter's dtype (as torch does). A mismatch raises before anything is copied."""
        params = dict(self.named_parameters())
        missing, unexpected = sorted(set(params) - set(state)), sorted(set(state) - set(params))
        if missing or unexpected:
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        values = {name: np.asarray(state[name]) for name in params}
        for name, p in params.items():
            if values[name].shape != p.shape:
                raise ValueError(
                    f"load_state_dict: '{name}' has shape {values[name].shape}, expected {p.shape}"
                )
        for name, p in params.items():
            value = values[name]
            with inplace(p.data) as dst:  # a retained graph that saved it then raises
                if dst.flags.writeable:
                    np.copyto(dst, value, casting="unsafe")
                    continue
            p.data = value.astype(p.dtype, copy=True)  # a read-only array a user gave: replaced


def _modules_in(value) -> Iterator[tuple[int | None, Module]]:
    if isinstance(value, Module):
        yield None, value
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if isinstance(v, Module):
                yield i, v


class ModuleList(Module):
    """A list of submodules, named by index (h.0, h.1, ...)."""

    def __init__(self, modules):
        self.items = list(modules)

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        yield prefix, self
        for i, m in enumerate(self.items):
            yield from m.named_modules(f"{prefix}.{i}" if prefix else str(i))

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Module:
        return self.items[i]
