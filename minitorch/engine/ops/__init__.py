"""Importing this package registers every primitive op, one module per family (the Tensor
methods' families in engine/tensor/, and the specs' in verification/specs/, have the same names)."""

from . import arithmetic, fused, indexing, linalg, movement, pointwise, reduce  # noqa: F401
