"""asv: the peers side by side — PyTorch eager and the hand-written NumPy step timed like
minitorch's, and track_ ratios minitorch/peer from one interleaved run (benchmarks/peers.py).

Ratios are positive (asv compare reads a larger value as worse only for positive numbers) and
come with the allocator mode as a parameter: "default" glibc or "tuned" (mallopt in every worker).
"""

from __future__ import annotations

import os

from minitorch.models.gpt import PRESETS

from . import harness as H
from . import peers

PRESET_NAMES, DTYPE_NAMES = sorted(PRESETS), ["float32", "float64"]


class TorchStep:
    """PyTorch eager: the twin of verification/torch_reference.py with torch.optim.Adam."""

    params = (PRESET_NAMES, DTYPE_NAMES)
    param_names = ["preset", "dtype"]
    timeout = 300

    def setup(self, preset, dtype):
        self.step = peers.make_step("torch", preset, dtype, H.BATCH, H.BLOCK)
        H.fix_threads()  # torch is loaded now: pin its pool as well
        self.step()

    def time_torch_step(self, preset, dtype):
        self.step()


class NumpyStep:
    """The hand-written NumPy step (benchmarks/numpy_peer.py); LayerNorm presets only."""

    params = (PRESET_NAMES, DTYPE_NAMES)
    param_names = ["preset", "dtype"]
    timeout = 300

    def setup(self, preset, dtype):
        if not peers.supports("numpy", preset):
            raise NotImplementedError(f"no hand-written NumPy peer for {preset}")
        self.step = peers.make_step("numpy", preset, dtype, H.BATCH, H.BLOCK)
        self.step()

    def time_numpy_step(self, preset, dtype):
        self.step()


class PeerRatio:
    """minitorch/peer step-time ratios from the measurement harness (median of per-round
    ratios); nan when not measured reliably."""

    params = (PRESET_NAMES, DTYPE_NAMES, list(peers.MALLOC_MODES))
    param_names = ["preset", "dtype", "malloc"]
    timeout = 900
    rounds = int(os.environ.get("MINITORCH_BENCH_ROUNDS", "8"))  # the smoke run sets 2
    steps = 1

    def setup_cache(self):
        configs = [(p, d) for p in PRESET_NAMES for d in DTYPE_NAMES]
        out = {}
        for mode in peers.MALLOC_MODES:
            for row in peers.measure(configs, rounds=self.rounds, steps=self.steps,
                                     malloc=mode)["rows"]:
                out[(row["preset"], row["dtype"], mode)] = row
        return out

    setup_cache.timeout = 900

    def _ratio(self, rows, key, peer):
        """nan (n/a) where there is no such peer (llama-mini) or where the ratio was not measured
        reliably (outside load, wide interval): asv history must not record noise as results."""
        row = rows[key]
        rel = (row.get("reliability") or {}).get(f"ratio_vs_{peer}") or {}
        if not rel.get("reliable"):
            return float("nan")
        return row.get(f"ratio_vs_{peer}", float("nan"))

    def track_ratio_vs_torch(self, rows, preset, dtype, malloc):
        return self._ratio(rows, (preset, dtype, malloc), "torch")

    track_ratio_vs_torch.unit = "minitorch/torch"

    def track_ratio_vs_numpy(self, rows, preset, dtype, malloc):
        return self._ratio(rows, (preset, dtype, malloc), "numpy")

    track_ratio_vs_numpy.unit = "minitorch/numpy"
