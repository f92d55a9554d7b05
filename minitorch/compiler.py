"""torch.compile and torch.compiler: minitorch runs every model eagerly, so compile returns the
model (or function) itself, with the same results; the options torch takes are accepted and
checked as torch checks them. (A deliberate difference: no graph capture, no speed-up.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model: Callable | None = None, *, fullgraph: bool = False,  # noqa: A001
            dynamic: bool | None = None, backend: str | Callable | None = "inductor",
            mode: str | None = None, options: dict | None = None, disable: bool = False,
            **kwargs: Any) -> Any:
    """torch.compile(model) -> model; torch.compile(**options) -> a decorator doing the same."""
    if mode not in _MODES:
        raise RuntimeError(f"torch.compile: unrecognized mode={mode!r}; one of "
                           f"{', '.join(repr(m) for m in _MODES[1:])}")
    if mode is not None and options is not None:
        raise RuntimeError("torch.compile: either mode or options can be specified, not both")
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise RuntimeError(f"torch.compile: model must be callable, got {type(model).__name__}")
    return model


def is_compiling() -> bool:
    return False


def disable(fn: Callable | None = None, recursive: bool = True, **kwargs: Any) -> Any:
    return (lambda f: f) if fn is None else fn
