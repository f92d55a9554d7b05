"""Tensor, assembled from its core (core.py: state, autograd, `apply`, `to`) and one mixin per
family of methods: interop, arithmetic, pointwise, reduce, movement, indexing, inplace. A method's
home is its family's module; its op is in engine/ops/<family>.py, its spec in
verification/specs/<family>.py."""

from .base import as_shape, numpy_aliases
from .core import Tensor, apply
from .indexing import where
from .reduce import MaxResult, SortResult

__all__ = ["MaxResult", "SortResult", "Tensor", "apply", "as_shape", "numpy_aliases", "where"]
