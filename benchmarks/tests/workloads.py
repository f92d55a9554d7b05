"""Synthetic workloads for the harness tests (factories for measure.Job)."""

from __future__ import annotations


def spin(iterations: int = 20_000):
    """A fixed amount of pure-Python work (single-threaded, no BLAS)."""

    def step() -> int:
        total = 0
        for i in range(iterations):
            total += i * i
        return total

    return step
