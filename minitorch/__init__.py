"""minitorch: a reverse-mode autodiff engine on NumPy, and a GPT trained with it.

Imports only numpy and the standard library; torch is never needed at run time.
"""

from . import backends, cuda, nn, optim, utils  # noqa: F401
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
__all__ = ["backends", "cuda", "load", "nn", "optim", "save", "utils", *_engine_all]
