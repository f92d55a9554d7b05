"""Shared benchmark set-up: fixed BLAS threads, seeded data, model builders, run metadata.

Thread policy: MINITORCH_BENCH_THREADS (default 2) is the one knob. It is exported as
OPENBLAS_NUM_THREADS/OMP_NUM_THREADS/MKL_NUM_THREADS before NumPy loads (when this module is
imported first) and is then enforced through OpenBLAS's own setter, so an earlier NumPy import or
an outer OPENBLAS_NUM_THREADS cannot change it. Torch is imported lazily, never from here.
"""

from __future__ import annotations

import ctypes
import os
import sys

THREADS = int(os.environ.get("MINITORCH_BENCH_THREADS", "2"))
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = str(THREADS)

import numpy as np  # noqa: E402  (after the thread variables, on purpose)

import minitorch as mt  # noqa: E402
from minitorch.optim import Adam  # noqa: E402

try:  # the model's package; a base commit the regression gate times may predate it
    from minitorch.models.gpt import GPT, PRESETS
except ImportError:
    from minitorch.nn.gpt import GPT, PRESETS

SEED = 0  # weights (minitorch generator) and data (numpy generator)
BATCH, BLOCK = 32, 64  # the target measurement's batch and sequence length
LR = 1e-3
DTYPES = {"float32": np.float32, "float64": np.float64}


def _openblas():
    """(set, get) ctypes functions of the OpenBLAS that NumPy loaded, or None if not found.
    minitorch.blas does the same for the library; this copy stays because asv times older
    commits whose minitorch has no blas module."""
    try:
        maps = open("/proc/self/maps").read().split()
    except OSError:
        return None
    libs = sorted({p for p in maps if "openblas" in os.path.basename(p) and ".so" in p})
    for path in libs:
        lib = ctypes.CDLL(path)
        for suffix in ("64_", "_64_", ""):
            prefix = "scipy_openblas" if "scipy" in path else "openblas"
            try:
                setter = getattr(lib, f"{prefix}_set_num_threads{suffix}")
                getter = getattr(lib, f"{prefix}_get_num_threads{suffix}")
            except AttributeError:
                continue
            setter.argtypes, getter.restype = [ctypes.c_int], ctypes.c_int
            return setter, getter
    return None


_BLAS = _openblas()


def fix_threads(n: int = THREADS) -> int:
    """Pin NumPy's OpenBLAS (and torch, if already imported) to n threads; return BLAS threads."""
    if _BLAS is None:
        raise RuntimeError("could not find NumPy's OpenBLAS in this process to pin its threads")
    _BLAS[0](n)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    return blas_threads()


def blas_threads() -> int:
    return int(_BLAS[1]()) if _BLAS else -1


fix_threads()


def batch(vocab: int, B: int = BATCH, T: int = BLOCK, seed: int = SEED):
    """Seeded (idx, targets), each (B, T) int64: a random token stream and its next tokens."""
    stream = np.random.default_rng(seed).integers(0, vocab, size=(B, T + 1), dtype=np.int64)
    return np.ascontiguousarray(stream[:, :-1]), np.ascontiguousarray(stream[:, 1:])


def config(preset: str, **overrides):
    if preset not in PRESETS:
        raise KeyError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
    return PRESETS[preset].replace(**overrides) if overrides else PRESETS[preset]


def minitorch_model(cfg, dtype: str, seed: int = SEED):
    """A seeded minitorch GPT and its Adam optimizer."""
    model = GPT(cfg, generator=mt.Generator(seed), dtype=DTYPES[dtype])
    return model, Adam(model.parameters(), lr=LR)


class MinitorchStep:
    """One training step of minitorch: zero_grad, forward + loss, backward, Adam; with
    workers > 1, forward and backward split the batch across that many threads
    (minitorch.parallel.DataParallel, as `minitorch train --workers`), and with replay they
    replay the captured step (`--replay`)."""

    name = "minitorch"

    def __init__(self, cfg, dtype: str, B: int = BATCH, T: int = BLOCK, seed: int = SEED,
                 workers: int = 1, replay: bool = False):
        self.model, self.opt = minitorch_model(cfg, dtype, seed)
        self.idx, self.targets = batch(cfg.vocab_size, B, T, seed)
        self.dp = None
        if workers > 1 or replay:  # imported only then: older trees (asv) have no parallel.py
            from minitorch.parallel import DataParallel

            self.dp = DataParallel(workers, replay=replay)

    def __call__(self) -> float:
        self.opt.zero_grad()
        if self.dp is not None:
            loss = self.dp.backward(lambda x, y: self.model(x, y)[1], self.idx, self.targets)
        else:
            _, loss_t = self.model(self.idx, self.targets)
            loss_t.backward()
            loss = float(loss_t.item())
        self.opt.step()
        return loss


def named_arrays(cfg, dtype: str, seed: int = SEED) -> dict:
    """The seeded minitorch initial weights by GPT-2 name, so every peer starts from them."""
    model = GPT(cfg, generator=mt.Generator(seed), dtype=DTYPES[dtype])
    return {name: p.data.copy() for name, p in model.named_parameters()}


def run_info(malloc: str | None = None) -> dict:
    """Machine (CPU, ISA flags, BLAS, versions: machine.info), threads, seeds and git sha, for
    every JSON this suite writes."""
    from . import machine

    info = {**machine.info(THREADS, malloc), "minitorch": mt.__version__,
            "blas_threads": blas_threads(), "seed": SEED, "batch": BATCH, "block": BLOCK,
            "git_sha": _git_sha()}
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        info.update(torch=torch.__version__, torch_threads=torch.get_num_threads())
    return info


def _git_sha() -> str:
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"
