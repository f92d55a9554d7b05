"""Generation speed: 256 new tokens with (a) the autograd GPT recomputing the whole context every
token (sample.generate), (b) the graph-free path without a cache, (c) the graph-free path with
the KV cache. Prints tokens/s, the ratios, and per-token model time in windows of 32 tokens.

    python -m benchmarks.generation_speed                      # seed preset, float32
    python -m benchmarks.generation_speed --presets seed gpt2-mini llama-mini --threads 1

block_size is overridden to prompt + new tokens (272), so no mode crops or slides and all three
do the same work per token. Writes reports/artifacts/generation.json.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from minitorch.generate.cached import generate_cached, generate_recompute, infer_next_logits
from minitorch.generate.infer import InferenceGPT
from minitorch.generate.sample import generate

from .harness import SEED, THREADS, config, fix_threads, minitorch_model, run_info

PROMPT, NEW, WINDOW = 16, 256, 32
MODES = ("autograd", "nocache", "cache")


class TimedEngine:
    """Delegates to an InferenceGPT and records the wall time of every forward call."""

    def __init__(self, engine: InferenceGPT):
        self.engine, self.config, self.times = engine, engine.config, []

    def new_cache(self, batch: int = 1):
        return self.engine.new_cache(batch)

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        out = self.engine(*args, **kwargs)
        self.times.append(time.perf_counter() - start)
        return out


class TimedModel:
    """Delegates to a GPT (for sample.generate) and records the wall time of every forward."""

    def __init__(self, model):
        self.model, self.config, self.times = model, model.config, []

    @property
    def training(self):
        return self.model.training

    def eval(self):
        return self.model.eval()

    def train(self, mode: bool = True):
        return self.model.train(mode)

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        out = self.model(*args, **kwargs)
        self.times.append(time.perf_counter() - start)
        return out


def build(preset: str, dtype: str = "float32", new: int = NEW, prompt: int = PROMPT):
    """The seeded model (block_size = prompt + new), its graph-free snapshot and a prompt."""
    cfg = config(preset, block_size=prompt + new)
    model, _ = minitorch_model(cfg, dtype)
    ids = np.random.default_rng(SEED).integers(0, cfg.vocab_size, (1, prompt))
    return model, InferenceGPT.from_model(model), ids


def run(mode: str, model, engine, ids, new: int = NEW) -> tuple[float, list[float]]:
    """Generate `new` tokens in `mode`; returns (total seconds, per-new-token model seconds)."""
    rng = np.random.default_rng(SEED)
    start = time.perf_counter()
    if mode == "autograd":
        timed = TimedModel(model)
        generate(timed, ids, new, temperature=1.0, rng=rng)
        per_token = timed.times[1:]  # call i computes the logits for new token i
    elif mode == "nocache":
        timed = TimedEngine(engine)
        generate_recompute(infer_next_logits(timed), ids, new, engine.config.block_size, rng=rng)
        per_token = timed.times[1:]
    elif mode == "cache":
        timed = TimedEngine(engine)
        generate_cached(timed, ids, new, rng=rng)
        per_token = timed.times[1:]  # times[0] is the prompt's prefill
    else:
        raise ValueError(f"unknown mode {mode!r}; choose from {MODES}")
    return time.perf_counter() - start, per_token


def windows(per_token: list[float], size: int = WINDOW) -> list[float]:
    """Median per-token milliseconds in consecutive windows of `size` tokens (the median keeps
    one descheduled token on a shared machine from hiding the trend)."""
    return [1e3 * statistics.median(per_token[i:i + size])
            for i in range(0, len(per_token) - size + 1, size)]


def measure(preset: str, dtype: str = "float32", rounds: int = 1) -> dict:
    """Best-of-`rounds` tokens/s per mode (modes interleaved each round) and window profiles."""
    model, engine, ids = build(preset, dtype)
    best: dict[str, tuple[float, list[float]]] = {}
    for _ in range(rounds):
        for mode in MODES:
            total, per_token = run(mode, model, engine, ids)
            if mode not in best or total < best[mode][0]:
                best[mode] = (total, per_token)
    row = {"preset": preset, "dtype": dtype, "prompt": PROMPT, "new_tokens": NEW,
           "block_size": engine.config.block_size, "rounds": rounds}
    for mode, (total, per_token) in best.items():
        w = windows(per_token)
        row[mode] = {"seconds": total, "tokens_per_sec": NEW / total, "window_ms": w,
                     "last_over_first_window": w[-1] / w[0]}
    row["cache_vs_autograd"] = row["cache"]["tokens_per_sec"] / row["autograd"]["tokens_per_sec"]
    row["cache_vs_nocache"] = row["cache"]["tokens_per_sec"] / row["nocache"]["tokens_per_sec"]
    row["nocache_vs_autograd"] = (row["nocache"]["tokens_per_sec"]
                                  / row["autograd"]["tokens_per_sec"])
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=["seed"])
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=THREADS,
                    help="BLAS threads (default MINITORCH_BENCH_THREADS); batch-1 decoding "
                         "gains nothing from threads, and on a busy machine they hurt")
    args = ap.parse_args(argv)
    fix_threads(args.threads)
    rows = []
    for preset in args.presets:
        row = measure(preset, args.dtype, args.rounds)
        rows.append(row)
        print(f"\n{preset} {args.dtype}: prompt {PROMPT}, {NEW} new tokens, block "
              f"{row['block_size']}, best of {args.rounds}, {args.threads} BLAS thread(s)")
        for mode in MODES:
            m = row[mode]
            print(f"  {mode:<9} {m['tokens_per_sec']:>9.1f} tok/s  {m['seconds']:>7.3f} s  "
                  f"last/first window {m['last_over_first_window']:.2f}")
        print(f"  cache vs autograd {row['cache_vs_autograd']:.1f}x, cache vs no-cache "
              f"{row['cache_vs_nocache']:.1f}x, no-cache vs autograd "
              f"{row['nocache_vs_autograd']:.1f}x")
        for mode in MODES:
            print(f"  {mode:<9} ms/token per {WINDOW}-token window: "
                  + " ".join(f"{v:.3f}" for v in row[mode]["window_ms"]))
    from artifacts import write_json

    write_json("generation.json", {"rows": rows, "info": run_info()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
