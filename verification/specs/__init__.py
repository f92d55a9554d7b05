"""The spec table: one OpSpec per registered op and per composite (STYLE §6).

Each spec says how to call the op on Tensors, which inputs to try (enumerated shape families drawn
from a seeded generator inside the op's domain), what the forward must equal (a NumPy reference
and, where torch has the op, a torch reference) and which kink conventions hold. The table is
split by op family, mirroring minitorch/engine/ops/: core.py (the machinery and SPECS),
references.py, arithmetic.py, pointwise.py, reduce.py, movement.py, indexing.py, linalg.py,
fused.py (with the composites); methods.py holds one call per public Tensor member, by family
(the mixins of engine/tensor/).
This package only describes; the checks live in gradcheck.py and the test_*.py files.
"""

from . import (  # noqa: F401  (fill SPECS)
    arithmetic,
    fused,
    indexing,
    linalg,
    movement,
    pointwise,
    reduce,
)
from .core import MARGIN, PAIRS, SPECS, Kink, OpSpec, Sample, Tol, sid

__all__ = ["MARGIN", "PAIRS", "SPECS", "Kink", "OpSpec", "Sample", "Tol", "sid"]
