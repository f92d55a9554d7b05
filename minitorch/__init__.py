"""minitorch: a reverse-mode autodiff engine on NumPy, and a GPT trained with it.

Imports only numpy and the standard library; torch is never needed at run time.
"""

from . import nn, optim  # noqa: F401
from .engine import *  # noqa: F401,F403
from .engine import __all__ as _engine_all
from .engine import bool, double, float, long  # noqa: A004, F401  (torch's dtype names)

__version__ = "0.1.0"
__all__ = ["nn", "optim", *_engine_all]
