"""The memory plan of a replayed step (minitorch.replay): its large arrays laid out once in one
mapping and reused by every replay.

The kernels that make a step's large arrays (op outputs, input gradients, activation-sized
temporaries) take them from `empty(shape, dtype)`, which is `np.empty` except while a `Pool`
is active in this thread. A replay asks for the same arrays in the same order every time, so:

1. A run with no plan yet records, for its k-th request, the size and when the array died:
   the request before which nothing but the pool held it any more (reference counts; a NumPy
   view holds the array it looks into, a saved or pending array its container). Its arrays of
   OWN_PAGES bytes or more lie on pages of their own, returned to the OS as they die, so it
   leaves no large holes in the heap. Requests under SMALL bytes are never planned.
2. `_plan` lays those lifetimes out in one mapping (the arena), each request at the lowest
   offset free for its whole lifetime, so arrays that never live at the same time share
   memory. The arena is the step's peak of live arrays (to within alignment on the GPT
   presets), mapped once.
3. Every later run hands out request k as a view of its slot. A request that differs from the
   plan (size), or whose memory something still holds (it or a slot sharing its bytes is
   referenced from anywhere), gets an ordinary array instead (`misses`): the plan can cost
   memory, never hand out memory in use.
4. Between runs, `lending()` serves other work from slots that are free (replay's eager check,
   an optimizer step), so it adds no memory beside the plan; the same counts protect both.

So a replayed step allocates nothing large: no allocator traffic, no pages faulted in afresh,
no heap holes between differently sized arrays (glibc's tuning stops mattering).
graph.exclusive counts a slot as memory the engine owns, so the in-place gradient rule works
on planned arrays as on any other.
"""

from __future__ import annotations

import ctypes
import math
import mmap
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

_local = threading.local()  # .pool: the active Pool of this thread, if any
_NUMPY_DOMAIN = 389047  # the tracemalloc domain NumPy reports array memory in
try:  # CPython's C API, to report mapped memory to tracemalloc (absent elsewhere: not reported)
    _track, _untrack = ctypes.pythonapi.PyTraceMalloc_Track, ctypes.pythonapi.PyTraceMalloc_Untrack
    _track.argtypes = [ctypes.c_uint, ctypes.c_size_t, ctypes.c_size_t]
    _untrack.argtypes = [ctypes.c_uint, ctypes.c_size_t]
except AttributeError:
    _track = _untrack = None
# ids of the arrays live pools hold for themselves: the slots, and the arrays a recording run
# watches (their ids cannot be reused while a pool holds them)
_kept: set[int] = set()
ALIGN = 64  # bytes: every slot starts on a cache line
OWN_PAGES = 1 << 17  # bytes from which a recorded array gets pages of its own (glibc's default)
SMALL = 1 << 10  # bytes below which a request is not planned (np.empty: the heap serves it well)


def active():
    """This thread's active Pool, or None (ops then let NumPy allocate their results)."""
    return getattr(_local, "pool", None)


def empty(shape: tuple[int, ...], dtype) -> np.ndarray:
    """An uninitialized array, from this thread's active pool if there is one."""
    pool = getattr(_local, "pool", None)
    if pool is None:
        return np.empty(shape, dtype)
    return pool.take((shape,) if isinstance(shape, (int, np.integer)) else tuple(shape), dtype)


def kept(a: np.ndarray) -> int:
    """1 if a live pool holds `a` for itself (a reference that is no user of it), else 0."""
    return 1 if id(a) in _kept else 0


def _mapped(nbytes: int) -> mmap.mmap:
    """nbytes (> 0) on pages of their own from the OS, returned to it when the mapping and every
    array over it are gone. Reported to tracemalloc as NumPy reports its arrays' memory, so
    Python's memory tools see planned arrays as they see any other."""
    pages = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)  # anonymous; a fork copies, not shares
    if _track is not None:
        address = np.frombuffer(pages, np.uint8, 1).ctypes.data
        _track(_NUMPY_DOMAIN, address, nbytes)  # a no-op (-2) when tracemalloc is off
        weakref.finalize(pages, _untrack, _NUMPY_DOMAIN, address)
    return pages


def _unused(arrays: list, i: int) -> bool:
    """Whether nothing but the list `arrays` holds arrays[i] (its count: the list, the argument)."""
    return sys.getrefcount(arrays[i]) == 2


class Pool:
    """The memory plan of one captured step (see the module docstring)."""

    def __init__(self) -> None:
        self.count = 0  # requests so far in the current run
        self.lends = False  # lending() is on: requests are served from free slots
        self._busy = threading.Lock()  # held by the block the pool serves
        self.sizes: list[int] = []  # nbytes of request k (recorded by the first run)
        self.dtypes: list[np.dtype] = []  # its dtype
        self.deaths: list[int] = []  # the request before which request k's array had died
        self.watched: list[np.ndarray] = []  # recording: the arrays handed out, still alive
        self.watched_k: list[int] = []  # ... and their request numbers
        self.slots: list[np.ndarray | None] | None = None  # request k's memory in the arena
        self.overlaps: list[frozenset[int]] = []  # slot k: the slots whose bytes meet k's
        self.by_size: list[int] = []  # requests with a slot, smallest first (for lending)
        self.out: set[int] = set()  # slots handed out (or held from before), maybe in use
        self.arena: mmap.mmap | None = None  # pages of its own (page-aligned)
        self.misses = 0  # requests the plan had a slot for, served outside it (all runs)

    @property
    def nbytes(self) -> int:
        """Bytes the plan holds (0 before it is made)."""
        return 0 if self.arena is None else len(self.arena)

    @contextmanager
    def active(self, plan: bool = True) -> Iterator[Pool]:
        """One run: within the block, `empty` in this thread takes from this pool. A run
        before the plan exists is recorded; once it completes, the plan is made from it, or
        (plan=False: a run that is not the step itself, e.g. replay's eager capture) the record
        is dropped and the next run records. While another thread (or an enclosing block of
        this one) uses the pool, the block allocates as usual instead."""
        with self._serving(lends=False) as serving:
            if not serving:
                yield self
                return
            self.count = 0
            try:
                yield self
            except BaseException:
                if self.slots is None:  # a partial record plans nothing: record again next run
                    self._reset()
                raise
            if self.slots is None:
                if plan:
                    self._watch(self.count)
                    self._plan()
                else:
                    self._reset()

    @contextmanager
    def lending(self) -> Iterator[Pool]:
        """Within the block, `empty` in this thread lends free planned memory (none before the
        plan exists, none free that fits, or the pool in use elsewhere: np.empty)."""
        with self._serving(lends=True):
            yield self

    @contextmanager
    def _serving(self, lends: bool) -> Iterator[bool]:
        """Serve this thread's `empty` for the block, if no one else is served by the pool (one
        thread at a time: request numbers and the unused checks are the pool's own state);
        yields whether it does. The marks of slots handed out (`out`) carry over from block to
        block: a slot something still holds (a kept output, a lent array) stays marked until
        `_free` finds it unused."""
        if not self._busy.acquire(blocking=False):
            yield False
            return
        prev, _local.pool, self.lends = getattr(_local, "pool", None), self, lends
        try:
            yield True
        finally:
            _local.pool = prev
            self._busy.release()

    def take(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < SMALL:
            return np.empty(shape, dtype)
        slots = self.slots
        if self.lends:
            return self._lend(shape, dtype, nbytes)
        k = self.count
        self.count += 1
        if slots is None:  # recording
            self._watch(k)
            self.sizes.append(nbytes)
            self.dtypes.append(dtype)
            self.deaths.append(-1)
            # a large array on pages of its own (no heap left behind), flat in its dtype, so a
            # view of it has the root a planned slot will have (minitorch.replay rebuilds views)
            own = (np.frombuffer(_mapped(nbytes), dtype) if nbytes >= OWN_PAGES
                   else np.empty(nbytes // dtype.itemsize, dtype))
            self.watched.append(own)
            self.watched_k.append(k)
            _kept.add(id(own))
            return own.reshape(shape)
        if k < len(slots) and slots[k] is not None:
            if self.sizes[k] == nbytes and self.dtypes[k] == dtype and self._free(k):
                self.out.add(k)
                return slots[k].reshape(shape)
            self.misses += 1
        return np.empty(shape, dtype)

    def _free(self, k: int) -> bool:
        """Whether slot k's bytes overlap no slot still in use. Only slots handed out since
        they were last seen unused are checked (`out`), so a slot is checked once per use, not
        once per slot sharing its bytes."""
        for j in self.overlaps[k] & self.out:
            if not _unused(self.slots, j):
                return False
            self.out.discard(j)
        return True

    def _lend(self, shape: tuple[int, ...], dtype: np.dtype, nbytes: int) -> np.ndarray:
        """The first nbytes of the smallest free slot that holds them, else a new array."""
        if self.slots is not None:
            for k in self.by_size:
                if self.sizes[k] >= nbytes and self._free(k):
                    self.out.add(k)
                    return self.slots[k].view(np.uint8)[:nbytes].view(dtype).reshape(shape)
        return np.empty(shape, dtype)

    def _watch(self, now: int) -> None:
        """Record as dead, before request `now`, every watched array only the pool holds."""
        watched, ks = self.watched, self.watched_k
        for i in reversed(range(len(watched))):
            if _unused(watched, i):
                self.deaths[ks[i]] = now
                _kept.discard(id(watched[i]))
                del watched[i], ks[i]

    def _plan(self) -> None:
        """Lay the recorded requests out in the arena: in turn longest-lived, largest and
        largest-times-longest first, each at the lowest offset free for its whole lifetime,
        keeping the smallest of the three layouts. Arrays still held after the run (a caller
        keeps one) and empty ones get no slot."""
        for a in self.watched:
            _kept.discard(id(a))
        self.watched, self.watched_k = [], []
        spans = [k for k in range(len(self.sizes)) if self.deaths[k] >= 0]
        extent = np.array([-(-n // ALIGN) * ALIGN for n in self.sizes], dtype=np.int64)
        born = np.arange(len(self.sizes))
        deaths = np.array(self.deaths, dtype=np.int64)
        life = deaths - born
        orders = (lambda k: (-life[k], k), lambda k: (-extent[k], k),
                  lambda k: (-extent[k] * life[k], k))
        layouts = [_place(sorted(spans, key=order), extent, deaths) for order in orders]
        offsets = min(layouts, key=lambda offs: max((offs[k] + extent[k] for k in offs),
                                                    default=0))
        total = max((offsets[k] + self.sizes[k] for k in offsets), default=0)
        self.arena = _mapped(max(total, 1))
        # each slot an array of its own over its bytes, in its dtype (its base is the mapping,
        # not an array), so every view of a view handed out holds the slot, whose reference
        # count tells whether it is in use
        self.slots = [None] * len(self.sizes)
        for k, off in offsets.items():
            dtype = self.dtypes[k]
            self.slots[k] = np.frombuffer(self.arena, dtype, self.sizes[k] // dtype.itemsize, off)
            _kept.add(id(self.slots[k]))
        # which slots' bytes meet which (fixed from now on), so a request checks only those
        lo = np.array([offsets.get(k, 0) for k in range(len(self.sizes))], np.int64)
        hi = np.array([offsets[k] + self.sizes[k] if k in offsets else 0
                       for k in range(len(self.sizes))], np.int64)
        self.overlaps = [frozenset(np.flatnonzero((lo < hi[k]) & (lo[k] < hi)).tolist())
                         for k in range(len(self.sizes))]
        self.by_size = sorted(offsets, key=lambda k: (self.sizes[k], k))

    def _reset(self) -> None:
        """Forget the record: the next run records."""
        for a in self.watched:
            _kept.discard(id(a))
        self.sizes, self.dtypes, self.deaths, self.watched, self.watched_k = [], [], [], [], []

    def __del__(self) -> None:
        # before the arrays go (they may outlive the pool in a caller's hands)
        for a in getattr(self, "watched", ()):
            _kept.discard(id(a))
        for slot in getattr(self, "slots", None) or ():
            if slot is not None:
                _kept.discard(id(slot))


def _place(order: list[int], extent: np.ndarray, deaths: np.ndarray) -> dict[int, int]:
    """Offsets for requests placed in `order`, each at the lowest offset where its bytes
    (extent) overlap no placed request alive at the same time (request k lives from k to
    deaths[k])."""
    offsets: dict[int, int] = {}
    placed = np.zeros(len(order), dtype=np.int64)  # request numbers, in placing order
    at = np.zeros(len(order), dtype=np.int64)  # their offsets
    for n, k in enumerate(order):
        j = placed[:n]
        alive = (j < deaths[k]) & (k < deaths[j])  # lifetimes overlap
        lows, highs = at[:n][alive], at[:n][alive] + extent[j[alive]]
        offset = 0
        for lo, hi in sorted(zip(lows.tolist(), highs.tolist())):  # the lowest gap that fits
            if offset + extent[k] <= lo:
                break
            offset = max(offset, hi)
        offsets[k] = int(offset)
        placed[n], at[n] = k, offset
    return offsets
