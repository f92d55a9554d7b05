"""The `minitorch` command line (argparse; `python -m minitorch`): the commands in COMMANDS.

Subcommands live in COMMANDS; a new one is one function that adds its arguments and returns the
function that runs it, registered with @command("name", "help"). There is one error path: every
error in user input (flags, config, data, checkpoint, files) is one line on stderr,
`minitorch <command>: error: ...`, with exit status 2 and no traceback (a mistyped command, flag
or config key also names the closest valid ones); a diverged run is one such line with status
1. Under MPI (`mpiexec -n N minitorch train`, or `train --ranks N`) rank 0 prints for all; a
rank that fails alone prints its line, naming itself, and aborts the job.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import dataclasses
import errno
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .data import DataError
from .distributed import Local, ReplicaDriftError, launched_by_mpi, world
from .io import CheckpointError, load_model
from .models.gpt import PRESETS, GPTConfig
from .train import signals
from .train.arguments import Parser, check_writable_file
from .train.config import (
    ConfigError,
    TrainConfig,
    apply_overrides,
    field_help,
    load_recipe,
    parse_overrides,
    parse_value,
)
from .train.consensus import check_same, code_version

Runner = Callable[[argparse.Namespace, list[str]], int]
COMMANDS: dict[str, tuple[str, Callable[[Parser], Runner]]] = {}
USER_ERRORS = (ConfigError, CheckpointError, DataError)  # one line, exit 2
_WORLD: Local = Local()  # the communicator of the running command (MPIWorld under mpiexec)


def command(name: str, help: str):
    """Register `setup(parser) -> run(args, extra)` as subcommand `name`."""

    def register(setup: Callable[[Parser], Runner]):
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
def _setup_train(p: Parser) -> Runner:
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
    p.add_argument("--ranks", type=_non_negative(int), default=None, metavar="N",
                   help="train data-parallel on N processes: runs mpiexec -n N minitorch train "
                        "with the other arguments (--batch_size stays the global batch; each "
                        "rank takes its share); default: one process, or mpiexec's N")
    p.add_argument("--hostfile", default=None, metavar="FILE",
                   help="with --ranks: the MPI hostfile listing the machines to run on")
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
        # --model.KEY=VALUE and the like; a typo is named with the closest key or train flag
        overrides.update(parse_overrides(extra, flags=[
            f for f in p.long_flags() if f[2:].replace("-", "_") not in keys]))
        recipe = load_recipe(args.recipe) if args.recipe else {}
        cfg = None if args.resume else apply_overrides(
            apply_overrides(TrainConfig(), recipe), overrides)
        if args.hostfile and args.ranks is None:
            raise ConfigError("--hostfile needs --ranks N (or pass it to mpiexec yourself)")
        if args.ranks is not None and not launched_by_mpi() and args.ranks != 1:
            return _launch(args.ranks, args.hostfile, args.argv, cfg)
        global _WORLD
        try:
            dist = _WORLD = world()
        except ImportError as e:
            raise ConfigError(str(e)) from None
        # ranks started differently must not take a step (mismatched collectives corrupt memory)
        check_same(dist, {"the minitorch code (sha256 of its source)": code_version(),
                          "--resume": args.resume, "--overwrite": args.overwrite,
                          "--recipe": args.recipe, "the recipe": recipe,
                          "--no-tune-allocator": not args.tune_allocator,
                          **{f"--{k}": v for k, v in overrides.items()}},
                   "start every rank with the same command line and minitorch")
        if args.ranks not in (None, dist.size):
            raise ConfigError(f"--ranks {args.ranks} inside an MPI job of {dist.size} ranks: "
                              "drop --ranks when starting minitorch with mpiexec")
        if cfg is not None and cfg.batch_size % dist.size:  # before the run folder is made
            raise ConfigError(f"batch_size {cfg.batch_size} (the global batch) does not divide "
                              f"among {dist.size} ranks; use a multiple of {dist.size}")
        say = (lambda text, **kw: print(text, **kw)) if dist.is_root else (lambda *a, **k: None)
        if args.resume:
            out = str(overrides.get("out_dir", TrainConfig().out_dir))

            def exists():
                if not Path(out).is_dir():
                    raise ConfigError(f"no checkpoint at {out}: the folder does not exist")

            dist.agree(exists, root_only=True)
        else:
            out = cfg.out_dir
        args.run_out = out  # named by the line a signal ends the run with
        if args.tune_allocator:
            tune_allocator()
        with contextlib.ExitStack() as held:
            # a second trainer on this folder stops here, naming our PID (rank 0 holds it)
            dist.agree(lambda: held.enter_context(hold_run(out)), root_only=True)
            if args.resume:
                trainer = Trainer.resume(out, {**recipe, **overrides}, sampler=generate,
                                         dist=dist)
                if trainer.step >= trainer.cfg.iters and trainer.finished():
                    say(f"{out}: the run is already finished (step {trainer.step}, --iters "
                        f"{trainer.cfg.iters}); nothing to do, nothing changed (pass a larger "
                        "--iters to continue it)", file=sys.stderr)
                    return 0
                say(f"finishing {out} at step {trainer.step}: the after-training sample and plot"
                    " were not written yet" if trainer.step >= trainer.cfg.iters else
                    f"resuming {out} at step {trainer.step}/{trainer.cfg.iters}",
                    file=sys.stderr)
            else:
                if not args.overwrite:  # fail before building anything
                    dist.agree(lambda: check_fresh(out, overwrite=False), root_only=True)
                trainer = Trainer(cfg, sampler=generate, overwrite=args.overwrite, dist=dist)
            ranks = f" | {dist.size} ranks x {trainer.cfg.batch_size // dist.size} rows" \
                if dist.size > 1 else ""
            say(f"{trainer.model.num_parameters():,} parameters | vocab "
                f"{trainer.tokenizer.vocab_size} | {len(trainer.train_data):,} train / "
                f"{len(trainer.val_data):,} val tokens | {trainer.cfg.dtype} | out "
                f"{trainer.cfg.out_dir}{ranks}", file=sys.stderr)
            summary = trainer.train()
        ev = summary["eval"]
        if ev:  # the last evaluation ran before its step's update: name its own step
            say(f"done: step {summary['step']} | eval at step {ev['step']}: train "
                f"{ev['train']:.4f} | val {ev['val']:.4f} | {summary['elapsed']:.1f}s")
        return 0

    return run


def _launch(ranks: int, hostfile: str | None, argv: list[str], cfg: TrainConfig | None) -> int:
    """Run `mpiexec -n ranks python -m minitorch train <argv without --ranks/--hostfile>` and
    return its exit status; what can be checked here is checked first (one-line errors). A
    signal to this process stops the ranks at a step boundary (launcher.run_mpiexec)."""
    from .launcher import LaunchError, mpiexec_command, run_mpiexec

    if ranks >= 1 and cfg is not None and cfg.batch_size % ranks:
        raise ConfigError(f"batch_size {cfg.batch_size} (the global batch) does not divide among "
                          f"{ranks} ranks; use a multiple of {ranks}")
    rest, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in ("--ranks", "--hostfile"):
            skip = True
        elif not a.startswith(("--ranks=", "--hostfile=")):
            rest.append(a)
    env = dict(os.environ)
    try:
        cmd = mpiexec_command(ranks, hostfile, ["train", *rest], "--ranks", env)
    except LaunchError as e:
        raise ConfigError(str(e)) from None
    code, signum = run_mpiexec(cmd, env)
    if signum is None:
        return code
    out = cfg.out_dir if cfg is not None else _resumed_out(argv)
    print(f"minitorch train: stopped by {signals.name(signum)}: the {ranks} ranks were told to "
          f"stop at a step boundary (mpiexec's exit status {code}); {_kept(out)}",
          file=sys.stderr, flush=True)
    return 128 + signum


def _resumed_out(argv: list[str]) -> str:
    """The --out of a `train --resume` command line (its config is read by the ranks)."""
    for i, a in enumerate(argv):
        if a in ("--out", "--out_dir") and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(("--out=", "--out_dir=")):
            return a.split("=", 1)[1]
    return TrainConfig().out_dir


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
def _setup_sample(p: Parser) -> Runner:
    p.add_argument("--checkpoint", required=True, metavar="DIR",
                   help="run folder holding checkpoint.json (a train --out folder)")
    p.add_argument("--prompt", default="\n", help="text to continue (default: %(default)r)")
    p.add_argument("--tokens", type=_non_negative(int), default=300,
                   help="how many tokens to generate")
    p.add_argument("--temperature", type=float, default=1.0, help="0 = greedy")
    p.add_argument("--top_k", "--top-k", type=int, default=None,
                   help="sample among the k best (default: all)")
    p.add_argument("--seed", type=_non_negative(int), default=0,
                   help="seed of the sampling draws")
    p.add_argument("--no-cache", dest="cache", action="store_false",
                   help="recompute the whole context per token with the autograd model (slow; "
                        "the default KV-cached path draws the same tokens)")

    def run(args: argparse.Namespace, extra: list[str]) -> int:
        from .generate.cached import generate_cached
        from .generate.infer import InferenceGPT
        from .generate.sample import check_sampling, generate

        if extra:
            p.refuse(extra)
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
def _setup_trace(p: Parser) -> Runner:
    p.add_argument("--checkpoint", required=True, metavar="DIR", help="a train --out folder")
    p.add_argument("--text", required=True,
                   help="the batch: its tokens are the inputs, the next tokens the targets")
    p.add_argument("--json", metavar="PATH", help="also write the trace as JSON (attention maps)")
    p.add_argument("--rows", type=_non_negative(int), default=None,
                   help="print at most this many op rows (default: all)")

    def run(args: argparse.Namespace, extra: list[str]) -> int:
        from .debug import trace

        if extra:
            p.refuse(extra)
        if args.json:
            check_writable_file(args.json, "--json")
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


@command("run", "run a PyTorch script unchanged, with torch resolved to minitorch")
def _setup_run(p: Parser) -> Runner:
    p.add_argument("--nproc", "--nproc-per-node", "--nproc_per_node", type=int, default=None,
                   metavar="N", help="run N ranks through mpiexec, as torchrun --nproc-per-node "
                                     "N does (each gets RANK, LOCAL_RANK, WORLD_SIZE, ...)")
    p.add_argument("--hostfile", default=None, metavar="FILE",
                   help="with --nproc: the MPI hostfile listing the machines to run on")
    p.add_argument("script", help="the script's path (its `import torch` gets minitorch)")
    # argparse counts a REMAINDER as required: only SCRIPT is (its arguments may be none)
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments"
                   ).required = False

    def run(args: argparse.Namespace, extra: list[str]) -> int:
        from .launcher import LaunchError, launch, run_rank

        if extra:  # options before SCRIPT that run does not take; the script's own come after it
            p.refuse(extra)
        if not Path(args.script).is_file():
            raise ConfigError(f"no script at {args.script}")
        if args.hostfile and args.nproc is None:
            raise ConfigError("--hostfile needs --nproc N (or pass it to mpiexec yourself)")
        if args.nproc is not None and launched_by_mpi():
            raise ConfigError("--nproc inside an MPI job: drop --nproc when starting minitorch "
                              "with mpiexec")
        script_args = _script_args(args.argv, p.value_flags())
        if args.nproc is not None:
            try:
                return launch(args.nproc, args.hostfile, args.script, script_args)
            except LaunchError as e:
                raise ConfigError(str(e)) from None
        return run_rank(args.script, script_args)

    return run


def _script_args(argv: list[str], value_flags: list[str]) -> list[str]:
    """What follows SCRIPT in `run [options] SCRIPT ARGS...`, verbatim: argparse's REMAINDER
    drops a `--` there, which `python SCRIPT -- ...` hands to the script. value_flags: run's
    options that take a value (the next argument is theirs, not SCRIPT)."""
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in value_flags else 1
    return argv[i + 1:]


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Runner]]:
    names = [f"`{name}`" for name in COMMANDS]  # the registry's, so a new command is listed
    parser = Parser(prog="minitorch", description="The `minitorch` command line: "
                    f"{', '.join(names[:-1])} and {names[-1]} (python -m minitorch COMMAND "
                    "--help for each)")
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
    argv = sys.argv[1:] if argv is None else list(argv)
    args, extra = parser.parse_known_args(argv)
    args.argv = argv[argv.index(args.command) + 1:]  # train --ranks relaunches with these
    prefix = f"minitorch {args.command}: error:"
    try:
        # SIGINT, SIGTERM, SIGHUP: the run stops at a step boundary with a checkpoint
        with signals.handled() if args.command == "train" else contextlib.nullcontext():
            return runners[args.command](args, extra)
    except signals.Interrupted as e:
        return _interrupted(args, e)
    except USER_ERRORS as e:
        return _fail(f"{prefix} {_one_line(e)}", 2)
    except TrainingDiverged as e:
        step = getattr(e, "saved_step", None)
        kept = "no checkpoint was written" if step is None else \
            f"the last checkpoint (step {step}) is intact"
        return _fail(f"{prefix} {_one_line(e)}; {kept}; lower --lr, set --grad_clip or pass "
                     "--on_nonfinite skip", 1)
    except ReplicaDriftError as e:
        return _fail(f"{prefix} {_one_line(e)}", 1)
    except OSError as e:
        if e.errno not in _MACHINE:
            raise
        return _fail(f"{prefix} {_machine_line(args, e)}", 1)
    except KeyboardInterrupt:
        if args.command == "train":
            return _interrupted(args, signals.Interrupted(2))
        if _WORLD.is_root:
            print(f"\nminitorch {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception:
        if _WORLD.size == 1:
            raise
        import traceback  # a bug on one rank: show it, then end every rank (no hang)

        traceback.print_exc()
        print(f"minitorch {args.command}: error: rank {_WORLD.rank}: unexpected error above; "
              "ending every rank", file=sys.stderr, flush=True)
        time.sleep(0.5)
        _WORLD.abort(1)
        raise


def _fail(line: str, code: int) -> int:
    """Print the error line and return `code`; under MPI rank 0 prints for all ranks when they
    all failed, and a rank that failed alone prints its line (naming itself) and aborts the
    job, so no rank is left waiting in a collective."""
    if _WORLD.size == 1 or _WORLD.failing_together():
        if _WORLD.is_root:
            print(line, file=sys.stderr)
        return code
    head, _, rest = line.partition(": error: ")
    print(f"{head}: error: rank {_WORLD.rank}: {rest}", file=sys.stderr, flush=True)
    time.sleep(0.5)  # let the launcher forward the line before the abort tears the job down
    _WORLD.abort(code)
    return code


# the machine's state, not a bug: one line naming the file and what to do
_MACHINE = {errno.ENOSPC: "the disk is full: free space (or choose another --out)",
            errno.EDQUOT: "the disk quota is used up: free space (or choose another --out)",
            errno.EACCES: "permission denied: make it writable (or choose another --out)",
            errno.EPERM: "permission denied: make it writable (or choose another --out)",
            errno.EROFS: "the filesystem is read-only: choose another --out",
            errno.ENOENT: "its folder vanished while the command ran (removed or unmounted?)"}


def _machine_line(args: argparse.Namespace, e: OSError) -> str:
    out = getattr(args, "run_out", None)
    what = e.filename or (f"a file in {out}" if out else "a file")
    line = f"cannot write {what}: {e.strerror or e}; {_MACHINE[e.errno]}"
    return f"{line}; {_kept(out)}" if args.command == "train" else line


def _kept(out: str | None) -> str:
    """What the run folder holds now, said truthfully: its last checkpoint, or none."""
    step = None
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        step = json.loads((Path(out) / "checkpoint.json").read_text())["step"]
    if not isinstance(step, int):
        return "no checkpoint was written"
    return (f"the last checkpoint (step {step}, {Path(out) / 'checkpoint.json'}) is intact; "
            f"continue with --resume --out {out}")


def _interrupted(args: argparse.Namespace, e: signals.Interrupted) -> int:
    """The line a signal ends `train` with, saying where its checkpoint is (true: read from
    the run folder when the run stopped at once); returns 128 + the signal's number."""
    out = getattr(args, "run_out", None)
    if e.saved_step is not None:
        line = (f"minitorch train: stopped by {e.name} after step {e.step}: checkpoint written "
                f"to {e.where}; continue with --resume --out {out}")
    else:
        line = f"minitorch train: stopped at once by {e.name}; {_kept(out)}"
    if _WORLD.size == 1 or _WORLD.failing_together():
        if _WORLD.is_root:
            print(f"\n{line}", file=sys.stderr, flush=True)
        return e.exit_code
    print(f"rank {_WORLD.rank}: {line}", file=sys.stderr, flush=True)
    time.sleep(0.5)
    _WORLD.abort(e.exit_code)
    return e.exit_code


def _one_line(e: BaseException) -> str:
    """The exception's message on one line (a stray newline must not split the error)."""
    return " ".join(str(e).split()) or type(e).__name__


if __name__ == "__main__":
    sys.exit(main())
