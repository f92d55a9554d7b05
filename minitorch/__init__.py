"""minitorch: a reverse-mode autodiff engine on NumPy, and a GPT trained with it.

Imports only numpy and the standard library; torch is never needed at run time.
"""

from . import amp, backends, compiler, cuda, distributed, nn, optim, utils  # noqa: F401
from .amp import autocast
from .compiler import compile  # noqa: A004, F401  (torch.compile: not in __all__, a builtin name)
from .engine import *  # noqa: F401,F403
from .engine import __all__ as _engine_all
from .engine import (  # noqa: A004, F401  (torch's dtype names and builtin-named functions)
    abs,
    all,
    any,
    bool,
    double,
    float,
    long,
    max,
    min,
    pow,
    round,
    sum,
)
from .io.serialization import load, save  # (io is above the engine: torch.save/torch.load)

__version__ = "0.1.0"
__all__ = ["amp", "autocast", "backends", "compiler", "cuda", "distributed", "load", "nn", "optim",
           "save", "utils", *_engine_all]


def __getattr__(name: str):  # a torch name minitorch lacks: one line naming it
    raise AttributeError(f"module 'minitorch' has no attribute {name!r} (torch.{name}: "
                         "minitorch does not have it)")
