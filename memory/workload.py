"""The workload every memory test measures: one training step of the seed GPT in float64 with
Adam on seeded random token batches, and the negative controls: the seed's graph leak, and a
native (C heap) leak that tracemalloc cannot see.

Test code only: it imports minitorch and never changes it (the control patches it for the
duration of a `with` block and restores it).
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

import minitorch
from minitorch.engine import Context, Tensor, graph
from minitorch.models import GPT, PRESETS, GPTConfig
from minitorch.optim import Adam
from minitorch.replay import Replay

BATCH = 32  # B: sequences per step
SEQ_LEN = 64  # T: tokens per sequence (the seed preset's block_size)
DTYPE = np.float64
SEED = 1234


@dataclass
class Workload:
    """A model, its Adam optimizer and a seeded stream of random (B, T) token batches.

    Args:
        config: the architecture (default: the seed preset).
        batch: B, sequences per step.
        seq_len: T, tokens per sequence.
        seed: seeds both the weights and the batch stream.
        replay: forward and backward through minitorch.replay (captured at the first step,
            replayed after: no graph is built, so step() returns no logits).
    """

    config: GPTConfig = field(default_factory=lambda: PRESETS["seed"])
    batch: int = BATCH
    seq_len: int = SEQ_LEN
    seed: int = SEED
    replay: bool = False

    def __post_init__(self):
        if self.batch < 1 or not 1 <= self.seq_len <= self.config.block_size:
            raise ValueError(f"Workload: need batch >= 1 and 1 <= seq_len <= block_size "
                             f"({self.config.block_size}), got batch={self.batch}, "
                             f"seq_len={self.seq_len}")
        self.model = GPT(self.config, generator=minitorch.Generator(self.seed), dtype=DTYPE)
        self.opt = Adam(self.model.parameters(), lr=1e-3)
        self.rng = np.random.default_rng(self.seed)
        self.replayer = Replay() if self.replay else None

    def next_batch(self) -> tuple[np.ndarray, np.ndarray]:
        """idx, targets: int64 (B, T); targets are idx shifted by one, as in language modelling."""
        tokens = self.rng.integers(0, self.config.vocab_size, (self.batch, self.seq_len + 1))
        return tokens[:, :-1], tokens[:, 1:]

    def step(self):
        """One training step; returns (logits, loss) so callers can watch the graph die."""
        idx, targets = self.next_batch()
        self.opt.zero_grad()
        if self.replayer is not None:
            # the optimizer step inside replay's: its temporaries in the step's planned memory
            loss = self.replayer.backward(lambda x, y: self.model(x, y)[1], idx, targets,
                                          step=self.opt.step)
            return None, loss
        logits, loss = self.model(idx, targets)  # (B, T, vocab), ()
        loss.backward()
        self.opt.step()
        return logits, loss

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()

    @property
    def n_params(self) -> int:
        return sum(p.data.size for p in self.model.parameters())


def context_arrays(ctx) -> list[np.ndarray]:
    """Arrays a Context keeps for its vjp: those in ctx.saved and any array-valued attribute."""
    found = []
    for value in vars(ctx).values():
        items = value if isinstance(value, (tuple, list)) else (value,)
        found += [a for a in items if isinstance(a, np.ndarray)]
    return found


@contextmanager
def gradients_copied() -> Iterator[None]:
    """Negative control: the engine without in-place gradients. With graph.exclusive always
    False, every later contribution to a pending gradient is summed into a copy and no vjp
    writes over its grad_out (relu's mask in pieces, Adam's per-step temporaries and replay's
    per-op frames stay)."""
    original = graph.exclusive
    graph.exclusive = lambda a: False
    try:
        yield
    finally:
        graph.exclusive = original


@contextmanager
def graph_release_disabled() -> Iterator[None]:
    """Negative control: bring back the seed engine's leak inside the block.

    Two patches, both needed: `Context.release` becomes a no-op (backward no longer frees the
    graph), and every recorded output is attached to its own Context, the cycle the seed's
    closures made by capturing `out`. With the cyclic GC disabled, every step's graph then
    survives the step.
    """
    make = Tensor.__dict__.get("_make")
    release = Context.__dict__.get("release")
    if not isinstance(make, classmethod) or release is None:
        raise RuntimeError("graph_release_disabled: minitorch no longer has the classmethod "
                           "Tensor._make and Context.release this control patches; update it")
    make_fn = make.__func__

    def make_cyclic(cls, data, ctx):
        out = make_fn(cls, data, ctx)
        if ctx is not None:
            ctx.output = out  # out -> ctx -> out: only the cyclic GC can free it
        return out

    def keep_graph(self):  # release nothing; only lift the engine's write lock, if it has one
        locks = self.__dict__.get("locks")
        if locks is not None:
            locks.unlock()

    Tensor._make = classmethod(make_cyclic)
    Context.release = keep_graph
    try:
        yield
    finally:
        Tensor._make = make
        Context.release = release


NATIVE_LEAK_BYTES = 64 * 1024  # per backward(): 18.75 MB over 300 steps, 0.0625 MB/step
_NATIVE_SOURCE = b"\x01" * (NATIVE_LEAK_BYTES - 1)  # strdup copies it and its NUL: 64 KiB
# Two ways to leak C heap. libc's strdup calls malloc itself, as a C extension's own code would,
# and memray hooks that call. ctypes' `libc.malloc` is found with dlsym and called directly, past
# memray's hooks: memray cannot see it (nor tracemalloc); glibc's own count (mallinfo2) can.
# Bound once, so a call allocates no Python objects that outlive it.
_libc = ctypes.CDLL(None)
_strdup, _malloc = _libc.strdup, _libc.malloc
_strdup.argtypes, _strdup.restype = [ctypes.c_char_p], ctypes.c_void_p
_malloc.argtypes, _malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
NATIVE_LEAKS = ("strdup", "ctypes_malloc")


def leak_native_block(via: str = "strdup") -> None:
    """Allocate NATIVE_LEAK_BYTES of C heap, via libc's strdup or ctypes' malloc; never free it."""
    if not (_strdup(_NATIVE_SOURCE) if via == "strdup" else _malloc(NATIVE_LEAK_BYTES)):
        raise MemoryError(f"{via} failed")


@contextmanager
def native_leak_planted(via: str = "strdup") -> Iterator[None]:
    """Negative control: inside the block, every Tensor.backward() also leaks
    NATIVE_LEAK_BYTES of C heap (`leak_native_block`), the way a leaking C extension in the
    engine would. tracemalloc sees only Python's and NumPy's allocators, so its heap stays flat.
    """
    backward = Tensor.__dict__.get("backward")
    if backward is None:
        raise RuntimeError("native_leak_planted: minitorch no longer has Tensor.backward")
    if via not in NATIVE_LEAKS:
        raise ValueError(f"native_leak_planted: via must be one of {NATIVE_LEAKS}, got {via!r}")

    def leaky_backward(self, *args, **kwargs):
        leak_native_block(via)
        return backward(self, *args, **kwargs)

    Tensor.backward = leaky_backward
    try:
        yield
    finally:
        Tensor.backward = backward
