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


def companions():
    """A step returning what the worker counts as its own CPU (machine.COMPANIONS): its pid and
    each companion's pid and command line."""
    import os

    from benchmarks import machine

    def cmdline(pid: int) -> str:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()

    def step() -> dict:
        return {"pid": os.getpid(), "companions": [[p, cmdline(p)] for p in machine.COMPANIONS]}

    return step
