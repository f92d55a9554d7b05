"""The `minitorch` command line: `train`, `sample` and `trace` (argparse; `python -m minitorch`).

Subcommands live in COMMANDS; a new one is one function that adds its arguments and returns the
function that runs it, registered with @command("name", "help"). Errors in user input (config,
checkpoint, tokenizer, files) print one clear line and exit with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys
from collections.abc import Callable

import numpy as np

from .data import DataError
from .io import CheckpointError, load_model
from .nn.gpt import GPTConfig
from .train.config import (
    ConfigError,
    TrainConfig,
    apply_overrides,
    load_recipe,
    parse_overrides,
    parse_value,
)

Runner = Callable[[argparse.Namespace, list[str]], int]
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], Runner]]] = {}


def command(name: str, help: str):
    """Register `setup(parser) -> run(args, extra)` as subcommand `name`."""

    def register(setup: Callable[[argparse.ArgumentParser], Runner]):
        COMMANDS[name] = (help, setup)
        return setup

    return register


def _field_comments(cls) -> dict[str, str]:
    """field name -> its trailing `# comment` in the dataclass source (the help text)."""
    src = inspect.getsource(cls)
    return dict(re.findall(r"^\s+(\w+):[^#\n]*#\s*(.+)$", src, flags=re.M))


@command("train", "train a GPT (on the embedded corpus unless --data is given)")
def _setup_train(p: argparse.ArgumentParser) -> Runner:
    p.add_argument("--recipe", help="named recipe (minitorch/recipes/NAME.json) or a recipe JSON path")
    p.add_argument("--resume", action="store_true",
                   help="continue the run saved in --out (its config; only iters and logging "
                        "intervals may change)")
    p.add_argument("--no-tune-allocator", dest="tune_allocator", action="store_false",
                   help="leave glibc's allocator alone (by default freed activation buffers are "
                        "kept in the process: see minitorch/allocator.py)")
    p.add_argument("--out", dest="out_dir", default=argparse.SUPPRESS, metavar="DIR",
                   help="output folder (same as --out_dir)")
    train_help, model_help = _field_comments(TrainConfig), _field_comments(GPTConfig)
    groups = [(p.add_argument_group("run config (TrainConfig)"), TrainConfig, train_help),
              (p.add_argument_group("model config (GPTConfig; also --model.KEY=VALUE)"),
               GPTConfig, model_help)]
    seen = {"model"}
    for group, cls, helps in groups:
        for f in dataclasses.fields(cls):
            if f.name in seen:
                continue  # TrainConfig.vocab_size wins; the model's comes from the tokenizer
            seen.add(f.name)
            flags = [f"--{f.name}"] + ([f"--{f.name.replace('_', '-')}"] if "_" in f.name else [])
            group.add_argument(*flags, dest=f.name, metavar="VALUE", default=argparse.SUPPRESS,
                               help=helps.get(f.name, ""))

    def run(args: argparse.Namespace, extra: list[str]) -> int:
        from .allocator import tune_allocator
        from .train.loop import Trainer  # the heavy imports only when training

        if args.tune_allocator:
            tune_allocator()

        keys = {f.name for f in dataclasses.fields(TrainConfig)} | {
            f.name for f in dataclasses.fields(GPTConfig)}
        overrides = {k: parse_value(k, v) for k, v in vars(args).items() if k in keys}
        overrides.update(parse_overrides(extra))  # --model.KEY=VALUE and the like
        recipe = load_recipe(args.recipe) if args.recipe else {}
        if args.resume:
            out = overrides.get("out_dir", TrainConfig().out_dir)
            trainer = Trainer.resume(out, {**recipe, **overrides})
            print(f"resuming {out} at step {trainer.step}/{trainer.cfg.iters}", file=sys.stderr)
        else:
            cfg = apply_overrides(apply_overrides(TrainConfig(), recipe), overrides)
            trainer = Trainer(cfg)
        print(f"{trainer.model.num_parameters():,} parameters | vocab "
              f"{trainer.tokenizer.vocab_size} | {len(trainer.train_data):,} train / "
              f"{len(trainer.val_data):,} val tokens | {trainer.cfg.dtype} | out "
              f"{trainer.cfg.out_dir}", file=sys.stderr)
        summary = trainer.train()
        ev = summary["eval"]
        if ev:
            print(f"done: step {summary['step']} | train {ev['train']:.4f} | val {ev['val']:.4f}"
                  f" | {summary['elapsed']:.1f}s")
        return 0

    return run


@command("sample", "generate text from a checkpoint folder")
def _setup_sample(p: argparse.ArgumentParser) -> Runner:
    p.add_argument("--checkpoint", required=True, metavar="DIR",
                   help="run folder holding checkpoint.json (a train --out folder)")
    p.add_argument("--prompt", default="\n", help="text to continue (default: a newline)")
    p.add_argument("--tokens", type=int, default=300, help="how many tokens to generate")
    p.add_argument("--temperature", type=float, default=1.0, help="0 = greedy")
    p.add_argument("--top_k", "--top-k", type=int, default=None, help="sample among the k best")
    p.add_argument("--seed", type=int, default=0, help="seed of the sampling draws")
    p.add_argument("--no-cache", dest="cache", action="store_false",
                   help="recompute the whole context per token with the autograd model (slow; "
                        "the default KV-cached path draws the same tokens)")

    def run(args: argparse.Namespace, extra: list[str]) -> int:
        from .generate.decode import generate_cached
        from .generate.infer import InferenceGPT
        from .generate.sample import check_sampling, generate

        if extra:
            raise ConfigError(f"sample: unrecognized arguments {extra}")
        try:  # the samplers' own check, turned into a one-line CLI error
            check_sampling(args.temperature, args.top_k)
        except ValueError as e:
            raise ConfigError(f"sample: {e}") from None
        if not args.prompt:
            raise ConfigError("sample: --prompt must not be empty")
        if args.tokens < 0:
            raise ConfigError(f"sample: --tokens must be >= 0, got {args.tokens}")
        model, tokenizer, _ = load_model(args.checkpoint)
        prompt = tokenizer.encode(args.prompt)
        opts = dict(temperature=args.temperature, top_k=args.top_k,
                    rng=np.random.default_rng(args.seed))
        if args.cache:
            ids = generate_cached(InferenceGPT.from_model(model), prompt, args.tokens, **opts)
        else:
            ids = generate(model, prompt, args.tokens, **opts)
        print(tokenizer.decode(ids))
        return 0

    return run


@command("trace", "trace one forward/backward of a checkpoint on a text: ops, grads, attention")
def _setup_trace(p: argparse.ArgumentParser) -> Runner:
    p.add_argument("--checkpoint", required=True, metavar="DIR", help="a train --out folder")
    p.add_argument("--text", required=True,
                   help="the batch: its tokens are the inputs, the next tokens the targets")
    p.add_argument("--json", metavar="PATH", help="also write the trace as JSON (attention maps)")
    p.add_argument("--rows", type=int, default=None, help="print at most this many op rows")

    def run(args: argparse.Namespace, extra: list[str]) -> int:
        from .debug import trace

        if extra:
            raise ConfigError(f"trace: unrecognized arguments {extra}")
        model, tokenizer, _ = load_model(args.checkpoint)
        ids = tokenizer.encode(args.text)[: model.config.block_size + 1]
        if len(ids) < 2:
            raise ConfigError("trace: --text must encode to at least 2 tokens")
        tr = trace(model, np.array([ids]), tokens=[tokenizer.decode([i]) for i in ids[:-1]])
        print(tr.table(args.rows))
        if args.json:
            print(f"wrote {tr.save_json(args.json)}", file=sys.stderr)
        return 0

    return run


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Runner]]:
    parser = argparse.ArgumentParser(prog="minitorch", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    runners = {}
    for name, (help_text, setup) in COMMANDS.items():
        runners[name] = setup(sub.add_parser(name, help=help_text, description=help_text,
                                             allow_abbrev=False))
    return parser, runners


def main(argv: list[str] | None = None) -> int:
    parser, runners = build_parser()
    args, extra = parser.parse_known_args(argv)
    try:
        return runners[args.command](args, extra)
    except (ConfigError, CheckpointError, DataError, FileNotFoundError) as e:
        print(f"minitorch {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"minitorch {args.command}: interrupted (the last checkpoint is intact; "
              "continue with --resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
