"""Fused primitives: ops that could be composed from others but have their own, cheaper vjp.

Each one is registered and gradchecked like any other op, and also checked equal to its
composite in float64 (verification/test_fused.py).
"""
