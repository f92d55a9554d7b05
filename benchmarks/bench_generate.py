"""asv: generating 256 tokens with the autograd GPT (full recompute per token), the graph-free
path without a cache, and with the KV cache; plus the cache's speed-up and per-token flatness.

The work is shared with generation_speed.py (the plain script that prints the same ratios).
"""

from __future__ import annotations

from .generation_speed import MODES, NEW, build, run, windows

PRESETS = ["seed", "gpt2-mini", "llama-mini"]


class GenerateSuite:
    """Times are for the whole 256-token generation (batch 1, prompt 16, block_size 272)."""

    params = (PRESETS, list(MODES))
    param_names = ["preset", "mode"]
    number = 1
    repeat = (1, 3, 30.0)
    warmup_time = 0.0
    timeout = 600

    def setup(self, preset, mode):
        self.model, self.engine, self.ids = build(preset)

    def time_generate_256(self, preset, mode):
        run(mode, self.model, self.engine, self.ids)

    def track_tokens_per_sec(self, preset, mode):
        seconds, _ = run(mode, self.model, self.engine, self.ids)
        return NEW / seconds

    track_tokens_per_sec.unit = "tokens/s"


class GenerateRatios:
    """Ratios measured in one process, back to back, so machine load affects both sides."""

    params = (PRESETS,)
    param_names = ["preset"]
    timeout = 600

    def setup(self, preset):
        self.model, self.engine, self.ids = build(preset)

    def track_cache_speedup_vs_autograd(self, preset):
        autograd, _ = run("autograd", self.model, self.engine, self.ids)
        cache, _ = run("cache", self.model, self.engine, self.ids)
        return autograd / cache

    track_cache_speedup_vs_autograd.unit = "x"

    def track_cache_last_over_first_window(self, preset):
        """Median per-token time of the last 32 tokens over the first 32 (1.0 = flat)."""
        _, per_token = run("cache", self.model, self.engine, self.ids)
        w = windows(per_token)
        return w[-1] / w[0]

    track_cache_last_over_first_window.unit = "ratio"
