"""Importing this package registers every primitive op."""

from . import elementwise, fused, linalg, reduce, shape  # noqa: F401
