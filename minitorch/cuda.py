"""torch.cuda's queries, for a script that picks its device (`"cuda" if
torch.cuda.is_available() else "cpu"`) or seeds every generator: minitorch runs on the CPU, so
no CUDA device is ever available, as in a CPU-only torch. Nothing here computes."""

from __future__ import annotations


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    """There is no CUDA generator to seed (a CPU-only torch does nothing here either)."""


manual_seed_all = manual_seed
