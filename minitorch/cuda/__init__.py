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


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def current_device() -> int:
    raise RuntimeError("torch.cuda.current_device: no CUDA device (minitorch runs on the CPU)")


def synchronize(device=None) -> None:
    """Nothing to wait for: every op has finished when it returns (a script's timing code calls
    this only when it uses CUDA)."""


from . import amp  # noqa: E402, F401  (torch.cuda.amp, reachable after `import torch`)
