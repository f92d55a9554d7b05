"""The `minitorch` command line: `train`, `sample` and `trace` (argparse; `python -m minitorch`).

Subcommands live in COMMANDS; a new one is one function that adds its arguments and returns the
function that runs it, registered with @command("name", "help"). There is one error path: every
error in user input (flags, config, data, checkpoint, files) is one line on stderr,
`minitorch <command>: error: ...`, with exit status 2 and no traceback; a diverged run is one
such line with status 1.
"""

from __future__ import annotations

import argparse
import codecs
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import numpy as np

from .data import DataError
from .io import CheckpointError, load_model
from .nn.gpt import PRESETS, GPTConfig
from .train.config import (
    ConfigError,
    TrainConfig,
    apply_overrides,
    field_help,
    load_recipe,
    parse_overrides,
    parse_value,
)

Runner = Callable[[argparse.Namespace, list[str]], int]
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], Runner]]] = {}
USER_ERRORS = (ConfigError, CheckpointError, DataError)  # one line, exit 2


class Parser(argparse.ArgumentParser):
    """argparse with the CLI's one error line (`<prog>: error: ...`, exit 2) instead of a usage
    block, and every default shown in --help."""

    def __init__(self, **kwargs):
        kwargs.setdefault("formatter_class", argparse.ArgumentDefaultsHelpFormatter)
        super().__init__(**kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def command(name: str, help: str):
    """Register `setup(parser) -> run(args, extra)` as subcommand `name`."""

    def register(setup: Callable[[argparse.ArgumentParser], Runner]):
        COMMANDS[name] = (help, setup)
        return setup

    return register


def _config_help(cls: type, f: dataclasses.Field) -> str:
    """A config flag's help: the field's metadata help and its default (from the seed preset
    for model keys, which --preset changes)."""
    text = field_help(cls, f.name)
    if cls is GPTConfig:
        text = text or f"GPTConfig.{f.name}"
        return f"{text} (default: the preset's; seed: {getattr(PRESETS['seed'], f.name)!r})"
    default = f.default_factory() if f.default is dataclasses.MISSING else f.default
    return f"{text} (default: {default!r})"


def _non_negative(kind: type) -> Callable[[str], object]:
    """argparse type: a number of `kind` that is >= 0 (one-line error otherwise)."""

    def parse(raw: str):
        try:
            value = kind(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind.__name__}, got {raw!r}") from None
        if not value >= 0:
            raise argparse.ArgumentTypeError(f"must be >= 0, got {raw!r}")
        return value

    parse.__name__ = kind.__name__
    return parse


@command("train", "train a GPT (on the embedded corpus unless --data is given)")
def _setup_train(p: argparse.ArgumentParser) -> Runner:
    p.add_argument("--recipe", help="named recipe (minitorch/recipes/NAME.json) or a recipe "
                                    "JSON path")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true",
                      help="continue the run saved in --out (its config; only iters, logging "
                           "and checkpoint intervals may change)")
    mode.add_argument("--overwrite", action="store_true",
                      help="replace the run already in --out (without it, an existing run is "
                           "an error)")
    p.add_argument("--no-tune-allocator", dest="tune_allocator", action="store_false",
                   help="leave glibc's allocator alone (by default freed activation buffers are "
                        "kept in the process: see minitorch/allocator.py)")
    p.add_argument("--out", dest="out_dir", default=argparse.SUPPRESS, metavar="DIR",
                   help=f"output folder (same as --out_dir; default: {TrainConfig().out_dir})")
    groups = [(p.add_argument_group("run config (TrainConfig)"), TrainConfig),
              (p.add_argument_group("model config (GPTConfig; also --model.KEY=VALUE)"),
               GPTConfig)]
    seen = {"model"}
    for group, cls in groups:
        for f in dataclasses.fields(cls):
            if f.name in seen:
                continue  # TrainConfig.vocab_size wins; the model's comes from the tokenizer
            seen.add(f.name)
            flags = [f"--{f.name}"] + ([f"--{f.name.replace('_', '-')}"] if "_" in f.name else [])
            group.add_argument(*flags, dest=f.name, metavar="VALUE", default=argparse.SUPPRESS,
                               help=_config_help(cls, f))

    def run(args: argparse.Namespace, extra: list[str]) -> int:
        from .allocator import tune_allocator
        from .generate.sample import generate
        from .train.loop import Trainer  # the heavy imports only when training
        from .train.run_dir import check_fresh, hold_run

        keys = {f.name for f in dataclasses.fields(TrainConfig)} | {
            f.name for f in dataclasses.fields(GPTConfig)}
        overrides = {k: parse_value(k, v) for k, v in vars(args).items() if k in keys}
        overrides.update(parse_overrides(extra))  # --model.KEY=VALUE and the like
        recipe = load_recipe(args.recipe) if args.recipe else {}
        if args.resume:
            out = str(overrides.get("out_dir", TrainConfig().out_dir))
            if not Path(out).is_dir():
                raise ConfigError(f"no checkpoint at {out}: the folder does not exist")
        else:
            cfg = apply_overrides(apply_overrides(TrainConfig(), recipe), overrides)
            out = cfg.out_dir
        if args.tune_allocator:
            tune_allocator()
        with hold_run(out):  # a second trainer on this folder stops here, naming our PID
            if args.resume:
                trainer = Trainer.resume(out, {**recipe, **overrides}, sampler=generate)
                if trainer.step >= trainer.cfg.iters:
                    print(f"{out}: the run is already finished (step {trainer.step}, --iters "
                          f"{trainer.cfg.iters}); nothing to do, nothing changed (pass a larger "
                          "--iters to continue it)", file=sys.stderr)
                    return 0
                print(f"resuming {out} at step {trainer.step}/{trainer.cfg.iters}",
                      file=sys.stderr)
            else:
                if not args.overwrite:
                    check_fresh(out, overwrite=False)  # fail before building anything
                trainer = Trainer(cfg, sampler=generate, overwrite=args.overwrite)
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


class _TokenPrinter:
    """Writes each new token's text to `out` as it is produced (byte-level tokens through an
    incremental UTF-8 decoder, so a character split across tokens prints once complete)."""

    def __init__(self, tokenizer, out):
        self.tokenizer, self.out = tokenizer, out
        self.bytes = getattr(tokenizer, "decode_bytes", None)
        self.utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def __call__(self, ids: np.ndarray) -> None:
        tok = [int(ids[0])]
        text = self.utf8.decode(self.bytes(tok)) if self.bytes else self.tokenizer.decode(tok)
        self.out.write(text)
        self.out.flush()

    def close(self) -> None:
        self.out.write((self.utf8.decode(b"", final=True) if self.bytes else "") + "\n")
        self.out.flush()


@command("sample", "generate text from a checkpoint folder (tokens print as they are drawn)")
def _setup_sample(p: argparse.ArgumentParser) -> Runner:
    p.add_argument("--checkpoint", required=True, metavar="DIR",
                   help="run folder holding checkpoint.json (a train --out folder)")
    p.add_argument("--prompt", default="\n", help="text to continue (default: %(default)r)")
    p.add_argument("--tokens", type=_non_negative(int), default=300,
                   help="how many tokens to generate")
    p.add_argument("--temperature", type=float, default=1.0, help="0 = greedy")
    p.add_argument("--top_k", "--top-k", type=int, default=None, help="sample among the k best")
    p.add_argument("--seed", type=_non_negative(int), default=0,
                   help="seed of the sampling draws")
    p.add_argument("--no-cache", dest="cache", action="store_false",
                   help="recompute the whole context per token with the autograd model (slow; "
                        "the default KV-cached path draws the same tokens)")

    def run(args: argparse.Namespace, extra: list[str]) -> int:
        from .generate.decode import generate_cached
        from .generate.infer import InferenceGPT
        from .generate.sample import check_sampling, generate

        if extra:
            raise ConfigError(f"unrecognized arguments {extra}")
        try:  # the samplers' own check, turned into a one-line CLI error
            check_sampling(args.temperature, args.top_k)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        if not args.prompt:
            raise ConfigError("--prompt must not be empty")
        model, tokenizer, _ = load_model(args.checkpoint)
        prompt = tokenizer.encode(args.prompt)
        if not prompt:
            raise ConfigError(f"--prompt {args.prompt!r} encodes to no tokens")
        printer = _TokenPrinter(tokenizer, sys.stdout)
        opts = dict(temperature=args.temperature, top_k=args.top_k,
                    rng=np.random.default_rng(args.seed), on_token=printer)
        sys.stdout.write(tokenizer.decode(prompt))
        sys.stdout.flush()
        if args.cache:
            generate_cached(InferenceGPT.from_model(model), prompt, args.tokens, **opts)
        else:
            generate(model, prompt, args.tokens, **opts)
        printer.close()
        return 0

    return run


@command("trace", "trace one forward/backward of a checkpoint on a text: ops, grads, attention")
def _setup_trace(p: argparse.ArgumentParser) -> Runner:
    p.add_argument("--checkpoint", required=True, metavar="DIR", help="a train --out folder")
    p.add_argument("--text", required=True,
                   help="the batch: its tokens are the inputs, the next tokens the targets")
    p.add_argument("--json", metavar="PATH", help="also write the trace as JSON (attention maps)")
    p.add_argument("--rows", type=_non_negative(int), default=None,
                   help="print at most this many op rows (default: all)")

    def run(args: argparse.Namespace, extra: list[str]) -> int:
        from .debug import trace

        if extra:
            raise ConfigError(f"unrecognized arguments {extra}")
        if args.json:
            _check_writable_file(args.json, "--json")
        model, tokenizer, _ = load_model(args.checkpoint)
        ids = tokenizer.encode(args.text)[: model.config.block_size + 1]
        if len(ids) < 2:
            raise ConfigError("--text must encode to at least 2 tokens")
        tr = trace(model, np.array([ids]), tokens=[tokenizer.decode([i]) for i in ids[:-1]])
        print(tr.table(args.rows))
        if args.json:
            try:
                print(f"wrote {tr.save_json(args.json)}", file=sys.stderr)
            except OSError as e:
                raise ConfigError(f"cannot write --json {args.json}: {e.strerror or e}") from None
        return 0

    return run


def _check_writable_file(path: str, flag: str) -> None:
    """ConfigError unless `path` can be written as a file (checked before the work is done)."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{flag} {path} is a folder; give a file path")
    if not p.parent.is_dir():
        raise ConfigError(f"{flag} {path}: folder {p.parent} does not exist")


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Runner]]:
    parser = Parser(prog="minitorch", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=Parser)
    runners = {}
    for name, (help_text, setup) in COMMANDS.items():
        runners[name] = setup(sub.add_parser(name, help=help_text, description=help_text,
                                             allow_abbrev=False))
    return parser, runners


def main(argv: list[str] | None = None) -> int:
    from .train.loop import TrainingDiverged

    parser, runners = build_parser()
    args, extra = parser.parse_known_args(argv)
    prefix = f"minitorch {args.command}: error:"
    try:
        return runners[args.command](args, extra)
    except USER_ERRORS as e:
        print(f"{prefix} {_one_line(e)}", file=sys.stderr)
        return 2
    except TrainingDiverged as e:
        step = getattr(e, "saved_step", None)
        kept = "no checkpoint was written" if step is None else \
            f"the last checkpoint (step {step}) is intact"
        print(f"{prefix} {_one_line(e)}; {kept}; lower --lr, set --grad_clip or pass "
              "--on_nonfinite skip", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        hint = " (the last checkpoint is intact; continue with --resume)" \
            if args.command == "train" else ""
        print(f"\nminitorch {args.command}: interrupted{hint}", file=sys.stderr)
        return 130


def _one_line(e: BaseException) -> str:
    """The exception's message on one line (a stray newline must not split the error)."""
    return " ".join(str(e).split()) or type(e).__name__


if __name__ == "__main__":
    sys.exit(main())
