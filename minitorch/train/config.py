"""TrainConfig (every field commented), strict "--key value" overrides and named recipes.

Overrides are parsed with ast.literal_eval (never exec) and type-checked against the field they
name; an unknown key or a wrongly typed value raises ConfigError naming the key. Keys reach
TrainConfig fields directly and GPTConfig fields either directly (--n_layer 4, when the name is
not a TrainConfig field) or explicitly (--model.n_layer=4). did_you_mean() names the closest
valid names of a mistyped one (difflib); the CLI's flags use it too.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import json
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..models.gpt import PRESETS, GPTConfig

RECIPES_DIR = Path(__file__).resolve().parents[1] / "recipes"  # packaged: minitorch/recipes/
MAX_STEP_TOKENS = 1 << 22  # batch_size x block_size: 4M tokens' logits already take GBs
MAX_EVAL_TOKENS = 1 << 24  # eval_iters x batch_size x block_size, per split, drawn up front
MAX_VOCAB_SIZE = 1 << 20  # BPE target: each id adds two embedding rows to the model


class ConfigError(ValueError):
    """A bad config key, value or recipe."""


def did_you_mean(word: str, names: typing.Mapping[str, str]) -> str:
    """" (did you mean X?)" naming the valid names closest to mistyped `word` (the best one, or
    those tied with it), or "" when none is close. `names` maps each name to how it is shown
    ('n_layer', --temperature); names compare without dashes or case, so top-k matches top_k
    and aliases are offered once."""
    def norm(s: str) -> str:
        return s.lstrip("-").replace("-", "_").lower()

    shown: dict[str, str] = {}
    for name, display in names.items():
        shown.setdefault(norm(name), display)
    target = norm(word)
    scores = {n: difflib.SequenceMatcher(None, target, n).ratio() for n in shown if n != target}
    # 0.7: close enough to be a typo (nlayer, temprature, trian); unrelated words score far less
    best = max(scores.values(), default=0.0)
    if best < 0.7:
        return ""
    close = [shown[n] for n, r in sorted(scores.items()) if r == best]
    return f" (did you mean {' or '.join(close)}?)"


def _finite(value: Any) -> bool:
    """True for any int (math.isfinite overflows on huge ones) and for finite floats."""
    return isinstance(value, int) or math.isfinite(value)


def _field(default: Any, help: str, **kwargs: Any) -> Any:
    """A config field whose help text (shown by `minitorch train --help`) is its metadata."""
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help},
                     **kwargs)
    return field(default=default, metadata={"help": help}, **kwargs)


def field_help(cls: type, name: str) -> str:
    """The help text of config field `name` of dataclass `cls` (empty if it has none)."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            return str(f.metadata.get("help", ""))
    raise KeyError(name)


@dataclass(frozen=True)
class TrainConfig:
    """One training run, every field documented in its metadata (the --help text)."""

    # model
    preset: str = _field("seed", "GPTConfig preset name from minitorch.models.gpt.PRESETS")
    model: dict = _field({}, "GPTConfig field overrides, e.g. {'n_head': 4}")
    dtype: str = _field("float32", "parameter and activation dtype: float32 or float64")
    # data
    data: str | None = _field(None, "corpus path; None = the embedded default corpus")
    tokenizer: str = _field("char", "char (vocab from the corpus) or bpe (byte-level, trained)")
    vocab_size: int = _field(512, "BPE only: target vocabulary (>= 256); the model's vocab "
                                  "comes from the tokenizer")
    # optimization
    iters: int = _field(4000, "optimizer steps in the whole run")
    batch_size: int = _field(32, "sequences per step (B); each is block_size tokens long (T)")
    optimizer: str = _field("adam", "adam (L2 decay in the gradient) or adamw (decoupled decay)")
    lr: float = _field(3e-4, "peak learning rate (finite, >= 0)")
    betas: tuple[float, float] = _field((0.9, 0.999), "Adam moment decay rates, each in [0, 1)")
    eps: float = _field(1e-8, "Adam denominator epsilon")
    weight_decay: float = _field(0.0, "applied to parameters with ndim >= 2 only (matrices, "
                                      "embeddings)")
    schedule: str = _field("constant", "constant or cosine (linear warmup, then cosine decay)")
    warmup: int = _field(0, "cosine only: linear warmup steps from lr/warmup up to lr")
    min_lr_ratio: float = _field(0.1, "cosine only: final lr as a fraction of lr, in [0, 1]")
    grad_clip: float = _field(0.0, "clip the global gradient L2 norm to this; 0 = off")
    on_nonfinite: str = _field("stop", "a non-finite loss or gradient: stop (naming the step "
                                       "and first op) or skip that step's update")
    # evaluation, logging, checkpoints
    eval_interval: int = _field(250, "evaluate at step 0, every eval_interval steps and the "
                                     "last step")
    eval_iters: int = _field(50, "batches per split in each evaluation (the same batches every "
                                 "time)")
    ckpt_interval: int = _field(1000, "checkpoint every this many steps and at the end; 0 = end "
                                      "only (and no checkpoints/ history or best)")
    keep_last: int = _field(3, "periodic checkpoints kept in checkpoints/ (plus best/, the "
                               "lowest val loss)")
    sync_check: int = _field(100, "under MPI: checksum every rank's weights every this many "
                                  "steps (and before every checkpoint); a drift stops the run "
                                  "naming the step; 0 = at checkpoints only")
    sample_tokens: int = _field(300, "length of the samples taken before and after training")
    plot: bool = _field(True, "write loss.png at the end (skipped, with a message, without "
                              "matplotlib)")
    workers: int = _field(0, "threads that split each batch's rows (data parallel, one BLAS "
                          "thread each, gradients summed in a fixed order); 0 = one per core "
                          "(1 under MPI, whose ranks use the cores); 1 = one thread whose BLAS "
                          "uses OPENBLAS_NUM_THREADS")
    replay: bool = _field(True, "after the first step, replay its captured op sequence "
                          "(minitorch.replay): no graph is built; bit-identical to eager")
    seed: int = _field(1337, "seeds weight init, batch order, eval batches and samples (>= 0)")
    out_dir: str = _field("runs/train", "metrics, samples, plot, config and checkpoints go here")

    def __post_init__(self):
        choices = {"dtype": ("float32", "float64"), "tokenizer": ("char", "bpe"),
                   "optimizer": ("adam", "adamw"), "schedule": ("constant", "cosine"),
                   "on_nonfinite": ("stop", "skip")}
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                raise ConfigError(f"{key} must be one of {allowed}, got {getattr(self, key)!r}")
        if self.preset not in PRESETS:
            raise ConfigError(f"preset must be one of {sorted(PRESETS)}, got {self.preset!r}")
        positive = ("iters", "batch_size", "eval_interval", "eval_iters")
        for key in positive:
            if getattr(self, key) < 1:
                raise ConfigError(f"{key} must be >= 1, got {getattr(self, key)}")
        if not (_finite(self.eps) and self.eps > 0):  # (torch's Adam takes 0: 0/0 where v = 0)
            raise ConfigError(f"eps must be a finite number > 0 (Adam divides by sqrt(v) + eps, "
                              f"and v is 0 where a gradient is 0), got {self.eps!r}")
        for key in ("lr", "weight_decay", "grad_clip", "warmup", "ckpt_interval",
                    "sample_tokens", "keep_last", "sync_check", "seed", "workers"):
            value = getattr(self, key)
            if not (_finite(value) and value >= 0):
                raise ConfigError(f"{key} must be a finite number >= 0, got {value!r}")
        if not (math.isfinite(self.min_lr_ratio) and 0.0 <= self.min_lr_ratio <= 1.0):
            raise ConfigError(f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
        if len(self.betas) != 2 or not all(math.isfinite(b) and 0.0 <= b < 1.0
                                           for b in self.betas):
            raise ConfigError(f"betas must be two numbers in [0, 1), got {self.betas}")
        if self.tokenizer == "bpe" and self.vocab_size < 256:
            raise ConfigError(f"vocab_size must be >= 256 for the byte-level BPE tokenizer, got "
                              f"{self.vocab_size}")
        if self.seed >= 2**63:
            raise ConfigError(f"seed must be < 2**63, got {self.seed}")
        if not self.out_dir:
            raise ConfigError("out_dir must not be empty")
        if self.vocab_size > MAX_VOCAB_SIZE:
            raise ConfigError(f"vocab_size must be <= {MAX_VOCAB_SIZE:,}, got {self.vocab_size:,}")
        T = self.model_config(vocab_size=1).block_size  # fails now on a bad model override
        if self.batch_size * T > MAX_STEP_TOKENS:
            raise ConfigError(f"batch_size {self.batch_size:,} x block_size {T} = "
                              f"{self.batch_size * T:,} tokens a step, more than the "
                              f"{MAX_STEP_TOKENS:,} this trainer allows; use a smaller batch_size")
        if self.eval_iters * self.batch_size * T > MAX_EVAL_TOKENS:
            raise ConfigError(f"eval_iters {self.eval_iters:,} x batch_size {self.batch_size} x "
                              f"block_size {T} = {self.eval_iters * self.batch_size * T:,} tokens "
                              f"per split drawn for evaluation, more than {MAX_EVAL_TOKENS:,}; "
                              "use a smaller eval_iters")

    def model_config(self, vocab_size: int) -> GPTConfig:
        """The preset with the model overrides applied and the tokenizer's vocab size; every
        size must be >= 1 and every float finite and > 0 (ConfigError naming the key)."""
        try:
            cfg = PRESETS[self.preset].replace(**{**self.model, "vocab_size": vocab_size})
        except (TypeError, ValueError) as e:
            raise ConfigError(f"model overrides {self.model}: {e}") from None
        for f in dataclasses.fields(cfg):
            value = getattr(cfg, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if not (value >= 1 if isinstance(value, int) else _finite(value) and value > 0):
                want = "an int >= 1" if isinstance(value, int) else "a finite number > 0"
                raise ConfigError(f"model key '{f.name}' must be {want}, got {value!r}")
        return cfg

    def replace(self, **changes) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (tuples become lists); from_dict() reverses it."""
        d = dataclasses.asdict(self)
        d["betas"] = list(self.betas)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        return apply_overrides(cls(), d)


_TRAIN_FIELDS = {f.name for f in dataclasses.fields(TrainConfig)}
_MODEL_FIELDS = {f.name for f in dataclasses.fields(GPTConfig)}
_TRAIN_TYPES = typing.get_type_hints(TrainConfig)
_MODEL_TYPES = typing.get_type_hints(GPTConfig)


def _check_type(key: str, value: Any, tp: Any) -> Any:
    """`value` converted to field type `tp` (int -> float, list -> tuple), or ConfigError."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _check_type(key, value, inner[0])
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if tp in (str, bool) and type(value) is tp:
        return value
    if origin is tuple and isinstance(value, (list, tuple)) and len(value) == len(args):
        return tuple(_check_type(key, v, a) for v, a in zip(value, args))
    if tp is dict and isinstance(value, dict):
        return value
    raise ConfigError(f"config key '{key}' expects {getattr(tp, '__name__', tp)}, "
                      f"got {value!r} ({type(value).__name__})")


def _parse_value(key: str, raw: str, tp: Any) -> Any:
    """A command-line string as a Python value: literal_eval, or the raw text for str fields."""
    if tp is str:
        return raw
    if tp == str | None:
        return None if raw == "None" else raw
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        raise ConfigError(f"config key '{key}': cannot parse {raw!r} as a Python literal "
                          "(numbers, True/False, None, tuples)") from None


def _route(key: str, flags: typing.Iterable[str] = ()) -> tuple[str, str]:
    """('train', field) or ('model', field) for a key, or ConfigError naming the closest valid
    keys (or `flags`, other options the caller accepts, e.g. --resume), else listing them all."""
    raw, key = key, key.replace("-", "_")
    if key.startswith("model."):
        name = key[len("model."):]
        if name in _MODEL_FIELDS:
            return "model", name
    elif key in _TRAIN_FIELDS and key != "model":
        return "train", key
    elif key in _MODEL_FIELDS:
        return "model", key
    train_keys = sorted(_TRAIN_FIELDS - {"model"})
    if key.startswith("model."):  # --model.n_layr: the field part is compared
        hint = did_you_mean(key[len("model."):], {k: f"'model.{k}'" for k in _MODEL_FIELDS})
    elif "." in key:  # --modle.n_layer
        hint = did_you_mean(key, {f"model.{k}": f"'model.{k}'" for k in _MODEL_FIELDS})
    else:
        hint = did_you_mean(key, {**{k: f"'{k}'" for k in [*train_keys, *_MODEL_FIELDS]},
                                  **{f: f for f in flags}})
        if hint and "'" not in hint:  # only flags are close: the typo is of an option
            raise ConfigError(f"unknown option --{raw}{hint}")
    if hint:
        raise ConfigError(f"unknown config key '{key}'{hint}")
    raise ConfigError(f"unknown config key '{key}'. TrainConfig keys: {train_keys}; "
                      f"model keys (also as model.KEY): {sorted(_MODEL_FIELDS)}")


def apply_overrides(cfg: TrainConfig, overrides: dict[str, Any]) -> TrainConfig:
    """cfg with typed `overrides` applied. Keys may be TrainConfig fields, GPTConfig fields,
    "model" (a dict of GPTConfig fields) or "model.KEY"; every value is type-checked."""
    changes: dict[str, Any] = {}
    model = dict(cfg.model)
    for key, value in overrides.items():
        if key == "model":
            if not isinstance(value, dict):
                raise ConfigError(f"config key 'model' expects a dict, got {value!r}")
            for k, v in value.items():
                _set_model(model, f"model.{k}", v)
            continue
        where, name = _route(key)
        if where == "model":
            _set_model(model, key, value)
        else:
            changes[name] = _check_type(key, value, _TRAIN_TYPES[name])
    try:
        return cfg.replace(**changes, model=model)
    except TypeError as e:
        raise ConfigError(str(e)) from None


def _set_model(model: dict, key: str, value: Any) -> None:
    _, name = _route(key)
    if name == "vocab_size":
        raise ConfigError("config key 'model.vocab_size' is set by the tokenizer; "
                          "use --tokenizer bpe --vocab_size N to change it")
    model[name] = _check_type(key, value, _MODEL_TYPES[name])


def parse_value(key: str, raw: str) -> Any:
    """The typed value of command-line string `raw` for config key `key`."""
    if key == "model":
        return _parse_value(key, raw, dict)
    where, name = _route(key)
    tp = (_MODEL_TYPES if where == "model" else _TRAIN_TYPES)[name]
    return _check_type(key, _parse_value(key, raw, tp), tp)


def parse_overrides(args: list[str], flags: typing.Iterable[str] = ()) -> dict[str, Any]:
    """["--key", "value", "--k2=v2"] -> {"key": value, "k2": v2}, each value parsed and typed.
    An unknown key is named first (with the closest of the keys and `flags`, the caller's
    other options), before its missing value could be: --resme is a typo, not a key."""
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--") or len(arg) == 2:
            raise ConfigError(f"expected --key value or --key=value, got {arg!r}")
        name = arg[2:].split("=", 1)[0]
        if name != "model":
            _route(name, flags)
        if "=" in arg:
            key, value = arg[2:].split("=", 1)
            i += 1
        else:
            if i + 1 >= len(args) or args[i + 1].startswith("--"):
                raise ConfigError(f"config key '{arg[2:]}' is missing a value")
            key, value = arg[2:], args[i + 1]
            i += 2
        out[key.replace("-", "_")] = parse_value(key, value)
    return out


def load_recipe(name_or_path: str) -> dict[str, Any]:
    """A recipe's overrides: a JSON file's "config" object, found by path or as
    minitorch/recipes/NAME.json. Unknown keys are rejected when the overrides are applied."""
    path = Path(name_or_path)
    if not path.suffix:
        path = RECIPES_DIR / f"{name_or_path}.json"
    if not path.is_file():
        known = sorted(p.stem for p in RECIPES_DIR.glob("*.json")) if RECIPES_DIR.is_dir() else []
        raise ConfigError(f"recipe {name_or_path!r} not found (looked for {path}); "
                          f"known recipes: {known}")
    try:
        recipe = json.loads(path.read_text())
    except ValueError as e:
        raise ConfigError(f"recipe {path} is not valid JSON: {e}") from None
    if not isinstance(recipe, dict) or not isinstance(recipe.get("config"), dict):
        raise ConfigError(f"recipe {path} needs a \"config\" object of overrides")
    return recipe["config"]


def resolve(recipe: str | None = None, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Defaults, then the recipe's values, then the typed overrides (command line wins)."""
    cfg = TrainConfig()
    if recipe:
        cfg = apply_overrides(cfg, load_recipe(recipe))
    return apply_overrides(cfg, overrides or {})
