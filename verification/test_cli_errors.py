"""One error path: every bad invocation of `minitorch train | sample | trace` -- bad flags, config
values, data files, output folders, damaged checkpoints -- is exactly one line on stderr,
`minitorch <command>: error: ...`, naming what is wrong, with exit status 2 and no traceback.

A table of bad invocations (each row: argv, an optional damage to a copy of a real run, and the
words the error must contain), a few of them also as real subprocesses, and hypothesis fuzzing
of config values and checkpoint manifests, which must give exit 0 or that one line. Every case
is counted in reliability.json.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minitorch import cli
from verification import reliability

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--iters", "2", "--eval_interval", "1", "--eval_iters", "1", "--batch_size", "2",
        "--n_layer", "1", "--n_embd", "16", "--n_hidden", "32", "--block_size", "16",
        "--sample_tokens", "4", "--plot", "False", "--no-tune-allocator"]
ONE_LINE = "one line on stderr naming the problem, exit 2, no traceback"
DELETE = object()  # manifest edit: remove the key


@pytest.fixture(scope="module", autouse=True)
def _publish():
    yield
    reliability.publish()


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A tiny finished run (checkpoint, history and best), shared read-only by the cases."""
    out = tmp_path_factory.mktemp("cli_errors") / "run"
    assert cli.main(["train", *TINY, "--out", str(out)]) == 0
    return out


def invoke(argv: list[str], capsys, main=None) -> tuple[int, str, str]:
    """main(argv) in-process (cli.main by default) -> (status, stdout, stderr); argparse's exit
    counts as a status."""
    capsys.readouterr()
    try:
        code = (main or cli.main)(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(code: int, err: str, command: str, pattern: str = "") -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith(f"minitorch {command}: error: "), err
    assert "Traceback" not in err and pattern in err, (pattern, err)


# ---- damage to a copy of the run --------------------------------------------------------------

def edit_manifest(*edits: tuple[tuple, object]) -> Callable[[Path], None]:
    """A prep that sets (or with DELETE removes) manifest entries at key paths."""

    def prep(folder: Path) -> None:
        path = folder / "checkpoint.json"
        m = json.loads(path.read_text())
        for keys, value in edits:
            target = m
            for k in keys[:-1]:
                target = target[k]
            if value is DELETE:
                del target[keys[-1]]
            else:
                target[keys[-1]] = value
        path.write_text(json.dumps(m))

    return prep


def write_manifest(text: str) -> Callable[[Path], None]:
    return lambda folder: (folder / "checkpoint.json").write_text(text)


def arrays_file(folder: Path) -> Path:
    return folder / json.loads((folder / "checkpoint.json").read_text())["arrays"]


def truncate_arrays(folder: Path) -> None:
    f = arrays_file(folder)
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_field(folder: Path, key: str, depth: int = 100_000) -> None:
    """Replace manifest[key] with a list nested `depth` deep (json.loads would recurse)."""
    path = folder / "checkpoint.json"
    m = json.loads(path.read_text())
    m[key] = "@DEEP@"
    path.write_text(json.dumps(m).replace('"@DEEP@"', nested(depth)))


# ---- the table ---------------------------------------------------------------------------------
# (id, argv, prep, pattern): {tmp} is a fresh folder per case, {run} a copy of the trained run
# (damaged by prep), {data}/NAME the data files made below.

DATA = {
    "empty.txt": b"",
    "short.txt": b"hello world, but short",
    "random.bin": bytes(range(256)) * 8,
    "latin1.txt": "caf\u00e9 cr\u00e8me br\u00fbl\u00e9e ".encode("latin-1") * 40,
    "ok.txt": b"to be or not to be, that is the question. " * 40,
}
T, S, R = "train", "sample", "trace"
CASES: list[tuple[str, list[str], Callable[[Path], None] | None, str]] = [
    # data files
    ("data-empty", [T, "--data", "{data}/empty.txt"], None, "is empty"),
    ("data-shorter-than-block", [T, "--data", "{data}/short.txt"], None, "split"),
    ("data-random-bytes", [T, "--data", "{data}/random.bin"], None, "UTF-8"),
    ("data-latin1", [T, "--data", "{data}/latin1.txt"], None, "UTF-8"),
    ("data-unreadable", [T, "--data", "/proc/self/mem"], None, "cannot be read"),
    ("data-folder", [T, "--data", "{data}"], None, "folder"),
    ("data-missing", [T, "--data", "{tmp}/no-such.txt"], None, "not found"),
    ("data-under-a-file", [T, "--data", "{data}/ok.txt/x.txt"], None, ""),
    # output folders
    ("out-is-a-file", [T, "--out", "{data}/ok.txt"], None, "is a file"),
    ("out-under-a-file", [T, "--out", "{data}/ok.txt/run"], None, "--out"),
    ("out-read-only-fs", [T, "--out", "/sys/minitorch-run"], None, "cannot create the run"),
    ("out-in-proc", [T, "--out", "/proc/minitorch-run"], None, "cannot create the run"),
    ("out-empty", [T, "--out", ""], None, "out_dir must not be empty"),
    ("out-holds-a-run", [T, "--out", "{run}"], None, "--resume or replace it with --overwrite"),
    ("resume-and-overwrite", [T, "--resume", "--overwrite", "--out", "{run}"], None,
     "not allowed with"),
    ("resume-missing-folder", [T, "--resume", "--out", "{tmp}/none"], None, "no checkpoint"),
    ("resume-empty-folder", [T, "--resume", "--out", "{tmp}"], None, "no checkpoint"),
    ("resume-changed-lr", [T, "--resume", "--out", "{run}", "--lr", "0.1"], None, "['lr']"),
    ("resume-other-data", [T, "--resume", "--out", "{run}", "--data", "{data}/ok.txt"], None,
     "['data']"),
    # config values
    ("seed-negative", [T, "--seed", "-1"], None, "seed must be"),
    ("seed-2**64", [T, "--seed", str(2**64)], None, "seed must be < 2**63"),
    ("n_embd-0", [T, "--n_embd", "0"], None, "'n_embd' must be an int >= 1"),
    ("n_hidden-negative", [T, "--n_hidden", "-5"], None, "'n_hidden' must be an int >= 1"),
    ("n_layer-0", [T, "--n_layer", "0"], None, "n_layer"),
    ("block_size-0", [T, "--block_size", "0"], None, "block_size"),
    ("n_head-not-dividing", [T, "--n_head", "3"], None, "n_head"),
    ("n_layer-10000", [T, "--n_layer", "10000", "--n_embd", "64"], None, "parameters"),
    ("n_embd-10**6", [T, "--n_embd", "1000000"], None, "parameters"),
    ("norm_eps-0", [T, "--norm_eps", "0"], None, "norm_eps"),
    ("rope_theta-negative", [T, "--rope_theta", "-1.0"], None, "rope_theta"),
    ("activation-unknown", [T, "--activation", "swish"], None, "activation"),
    ("lr-1e400", [T, "--lr", "1e400"], None, "lr must be a finite number >= 0, got inf"),
    ("lr-nan", [T, "--lr", "nan"], None, "lr"),
    ("lr-float-nan", [T, "--lr", "float('nan')"], None, "cannot parse"),
    ("lr-negative", [T, "--lr", "-1"], None, "lr must be a finite number >= 0"),
    ("lr-string", [T, "--lr", "'fast'"], None, "expects float"),
    ("betas-one", [T, "--betas", "(0.9, 1.0)"], None, "betas"),
    ("betas-short", [T, "--betas", "(0.9,)"], None, "betas"),
    ("eps-negative", [T, "--eps", "-1e-8"], None, "eps"),
    ("weight_decay-negative", [T, "--weight_decay", "-0.1"], None, "weight_decay"),
    ("weight_decay-inf", [T, "--weight_decay", "1e999"], None, "weight_decay"),
    ("min_lr_ratio-2", [T, "--min_lr_ratio", "2"], None, "min_lr_ratio"),
    ("warmup-negative", [T, "--warmup", "-1"], None, "warmup"),
    ("grad_clip-negative", [T, "--grad_clip", "-1"], None, "grad_clip"),
    ("iters-0", [T, "--iters", "0"], None, "iters must be >= 1"),
    ("iters-word", [T, "--iters", "many"], None, "cannot parse 'many'"),
    ("iters-float", [T, "--iters", "1.5"], None, "expects int"),
    ("batch_size-0", [T, "--batch_size", "0"], None, "batch_size"),
    ("eval_iters-0", [T, "--eval_iters", "0"], None, "eval_iters"),
    ("keep_last-negative", [T, "--keep_last", "-1"], None, "keep_last"),
    ("sample_tokens-negative", [T, "--sample_tokens", "-1"], None, "sample_tokens"),
    ("dtype-float16", [T, "--dtype", "float16"], None, "dtype"),
    ("optimizer-unknown", [T, "--optimizer", "lion"], None, "optimizer"),
    ("schedule-unknown", [T, "--schedule", "linear"], None, "schedule"),
    ("on_nonfinite-unknown", [T, "--on_nonfinite", "ignore"], None, "on_nonfinite"),
    ("tokenizer-unknown", [T, "--tokenizer", "word"], None, "tokenizer"),
    ("bpe-vocab-too-small", [T, "--tokenizer", "bpe", "--vocab_size", "100"], None,
     "vocab_size must be >= 256"),
    ("preset-unknown", [T, "--preset", "huge"], None, "preset"),
    ("model-vocab_size", [T, "--model.vocab_size=80"], None, "set by the tokenizer"),
    ("unknown-key", [T, "--nlayer", "2"], None, "unknown config key 'nlayer'"),
    ("key-without-value", [T, "--lr"], None, "lr"),
    ("positional-junk", [T, "banana"], None, "banana"),
    ("recipe-unknown", [T, "--recipe", "fastest"], None, "recipe 'fastest' not found"),
    ("recipe-bad-json", [T, "--recipe", "{data}/ok.txt"], None, "not valid JSON"),
    # sample
    ("sample-no-checkpoint-flag", [S], None, "--checkpoint"),
    ("sample-missing-folder", [S, "--checkpoint", "{tmp}/none"], None, "no checkpoint"),
    ("sample-checkpoint-is-a-file", [S, "--checkpoint", "{data}/ok.txt"], None, ""),
    ("sample-tokens-negative", [S, "--checkpoint", "{run}", "--tokens", "-1"], None, ">= 0"),
    ("sample-tokens-word", [S, "--checkpoint", "{run}", "--tokens", "lots"], None, "int"),
    ("sample-seed-negative", [S, "--checkpoint", "{run}", "--seed", "-1"], None, ">= 0"),
    ("sample-top_k-0", [S, "--checkpoint", "{run}", "--top_k", "0"], None, "top_k"),
    ("sample-temperature-nan", [S, "--checkpoint", "{run}", "--temperature", "nan"], None,
     "temperature"),
    ("sample-temperature-negative", [S, "--checkpoint", "{run}", "--temperature", "-1"], None,
     "temperature"),
    ("sample-empty-prompt", [S, "--checkpoint", "{run}", "--prompt", ""], None, "--prompt"),
    ("sample-unknown-char", [S, "--checkpoint", "{run}", "--prompt", "caf\u00e9"], None,
     "unknown character"),
    ("sample-extra-arg", [S, "--checkpoint", "{run}", "--bogus", "1"], None, "--bogus"),
    ("sample-arrays-wider-than-config",
     [S, "--checkpoint", "{run}"], edit_manifest((("model_config", "n_embd"), 32)), ""),
    ("sample-arrays-missing-a-layer",
     [S, "--checkpoint", "{run}"], edit_manifest((("model_config", "n_layer"), 2)), ""),
    ("sample-invalid-model-config",
     [S, "--checkpoint", "{run}"], edit_manifest((("model_config", "n_layer"), 0)), ""),
    ("sample-model-config-not-object",
     [S, "--checkpoint", "{run}"], edit_manifest((("model_config",), [1, 2])), "model_config"),
    ("sample-manifest-missing-shape",
     [S, "--checkpoint", "{run}"], edit_manifest((("shapes", "model/wte.weight"), DELETE)), ""),
    ("sample-manifest-wrong-shape",
     [S, "--checkpoint", "{run}"], edit_manifest((("shapes", "model/wte.weight"),
                                                 [[3, 3], "<f4"])), ""),
    ("sample-truncated-arrays", [S, "--checkpoint", "{run}"], truncate_arrays, ""),
    ("sample-arrays-deleted", [S, "--checkpoint", "{run}"],
     lambda f: arrays_file(f).unlink(), ""),
    ("sample-manifest-not-json", [S, "--checkpoint", "{run}"], write_manifest("{oops"), ""),
    ("sample-manifest-empty", [S, "--checkpoint", "{run}"], write_manifest(""), ""),
    ("sample-manifest-a-list", [S, "--checkpoint", "{run}"], write_manifest("[1, 2]"), ""),
    ("sample-manifest-deeply-nested", [S, "--checkpoint", "{run}"],
     write_manifest('{"extra": ' + nested(100_000) + "}"), ""),
    ("sample-tokenizer-unknown-kind", [S, "--checkpoint", "{run}"],
     edit_manifest((("tokenizer", "kind"), "word")), ""),
    # trace
    ("trace-json-is-a-folder", [R, "--checkpoint", "{run}", "--text", "The ferry", "--json",
                                "{tmp}"], None, "is a folder"),
    ("trace-json-folder-missing", [R, "--checkpoint", "{run}", "--text", "The ferry", "--json",
                                   "{tmp}/no/such/t.json"], None, "does not exist"),
    ("trace-text-one-token", [R, "--checkpoint", "{run}", "--text", "T"], None,
     "at least 2 tokens"),
    ("trace-rows-negative", [R, "--checkpoint", "{run}", "--text", "The", "--rows", "-1"], None,
     ">= 0"),
    ("trace-no-text", [R, "--checkpoint", "{run}"], None, "--text"),
    ("trace-arrays-wider-than-config", [R, "--checkpoint", "{run}", "--text", "The ferry"],
     edit_manifest((("model_config", "n_embd"), 32)), ""),
    ("trace-missing-folder", [R, "--checkpoint", "{tmp}/none", "--text", "ab"], None,
     "no checkpoint"),
    # resume on a damaged checkpoint (only a resume reads these parts)
    ("resume-optimizer-step-string", [T, "--resume", "--out", "{run}", "--iters", "3"],
     edit_manifest((("optimizer", "state", "0", "step"), "x")), "step"),
    ("resume-optimizer-missing-exp_avg", [T, "--resume", "--out", "{run}", "--iters", "3"],
     edit_manifest((("shapes", "optim/0/exp_avg"), DELETE)), ""),
    ("resume-optimizer-lr-nan", [T, "--resume", "--out", "{run}", "--iters", "3"],
     edit_manifest((("optimizer", "param_groups", 0, "lr"), float("nan"))), "lr"),
    ("resume-optimizer-betas-bad", [T, "--resume", "--out", "{run}", "--iters", "3"],
     edit_manifest((("optimizer", "param_groups", 0, "betas"), [2, 2])), "betas"),
    ("resume-elapsed-string", [T, "--resume", "--out", "{run}", "--iters", "3"],
     edit_manifest((("extra", "elapsed"), "x")), "elapsed"),
    ("resume-best-string", [T, "--resume", "--out", "{run}", "--iters", "3"],
     edit_manifest((("extra", "best"), "x")), "best"),
    ("resume-config-lr-string", [T, "--resume", "--out", "{run}", "--iters", "3"],
     edit_manifest((("config", "lr"), "x")), "lr"),
    ("resume-config-unknown-key", [T, "--resume", "--out", "{run}", "--iters", "3"],
     edit_manifest((("config", "learning_rate"), 1.0)), "learning_rate"),
    ("resume-rng-empty", [T, "--resume", "--out", "{run}", "--iters", "3"],
     edit_manifest((("rng",), {})), "rng"),
    ("resume-deeply-nested", [T, "--resume", "--out", "{run}", "--iters", "3"],
     lambda f: deep_field(f, "extra"), ""),
    ("resume-deeply-nested-config", [T, "--resume", "--out", "{run}", "--iters", "3"],
     lambda f: deep_field(f, "config"), ""),
]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("data")
    for name, blob in DATA.items():
        (folder / name).write_bytes(blob)
    return folder


def _argv(case: list[str], tmp: Path, run_copy: Path, data: Path) -> list[str]:
    argv = [a.replace("{tmp}", str(tmp)).replace("{run}", str(run_copy))
            .replace("{data}", str(data)) for a in case]
    if argv[0] == T and "--resume" not in argv:  # tiny, and never the default runs/train
        argv[1:1] = [*TINY, "--out", str(tmp / "out")]
    return argv


def test_error_table_is_big_enough():
    assert len(CASES) >= 60 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case_id, case, prep, pattern", CASES, ids=[c[0] for c in CASES])
def test_bad_invocation_is_one_line_exit_2(case_id, case, prep, pattern, run, data_dir, tmp_path,
                                           capsys):
    uses_run = any("{run}" in a for a in case)
    run_copy = Path(shutil.copytree(run, tmp_path / "run")) if uses_run else tmp_path / "run"
    if prep is not None:
        prep(run_copy)
    before = _tree(run_copy) if uses_run else {}
    argv = _argv(case, tmp_path / "case", run_copy, data_dir)
    (tmp_path / "case").mkdir()
    with reliability.fault("bad CLI invocation (table)", ONE_LINE, "test_cli_errors.py"):
        code, out, err = invoke(argv, capsys)
        assert_one_line(code, err, argv[0], pattern)
        if uses_run:
            assert _tree(run_copy) == before  # a refused command changes nothing in the run


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under folder (the lock file aside) -> its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".lock"}


@pytest.mark.parametrize("argv, pattern", [
    (["train", "--n_embd", "0"], "'n_embd' must be an int >= 1"),
    (["sample", "--checkpoint", "/no/such/run"], "no checkpoint"),
    (["trace", "--checkpoint", "/no/such/run", "--text", "ab", "--rows", "x"], "--rows"),
    (["frobnicate"], "invalid choice"),
])
def test_real_process_prints_one_line_exit_2(argv, pattern, tmp_path):
    """The same path in a real process: argparse's own errors included, nothing else printed."""
    with reliability.fault("bad CLI invocation (subprocess)", ONE_LINE, "test_cli_errors.py"):
        proc = subprocess.run([sys.executable, "-m", "minitorch", *argv, "--out",
                               str(tmp_path / "o")] if argv[0] == "train" else
                              [sys.executable, "-m", "minitorch", *argv],
                              capture_output=True, text=True, timeout=120)
        command = argv[0] if argv[0] in cli.COMMANDS else ""
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert proc.stderr.startswith(f"minitorch {command}".rstrip() + ": error: ")
        assert pattern in proc.stderr


# ---- fuzzing -----------------------------------------------------------------------------------

WEIRD = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True),
    st.sampled_from([0, 1, -1, 2**31, 1e400, -1e-300, 0.5]), st.text(max_size=6), st.none(),
    st.booleans(), st.tuples(st.floats(), st.floats()), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
KEYS = ["lr", "betas", "eps", "weight_decay", "warmup", "min_lr_ratio", "grad_clip", "iters",
        "batch_size", "eval_interval", "eval_iters", "ckpt_interval", "keep_last", "seed",
        "dtype", "optimizer", "schedule", "on_nonfinite", "tokenizer", "vocab_size", "preset",
        "n_layer", "n_head", "n_embd", "n_hidden", "block_size", "norm_eps", "rope_theta",
        "activation", "norm", "pos", "bias", "model"]


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(KEYS), value=WEIRD)
def test_fuzzed_config_value_is_accepted_or_one_line(key, value, tmp_path, capsys, monkeypatch):
    """Any value for any key: either the run is built (training itself is stubbed out) or the
    error is the one line. Huge models are refused by a small parameter cap, not allocated."""
    monkeypatch.setenv("MINITORCH_MAX_PARAMS", "200000")
    monkeypatch.setattr("minitorch.train.loop.Trainer.train", _no_training)
    argv = ["train", *TINY, "--out", str(tmp_path / "fuzz"), "--overwrite", f"--{key}",
            repr(value)]
    with reliability.fault("fuzzed config value (hypothesis)",
                           "accepted, or " + ONE_LINE, "test_cli_errors.py"):
        code, _, err = invoke(argv, capsys)
        if code != 0:
            assert_one_line(code, err, "train")


def _no_training(self, until=None):
    return {"step": 0, "eval": {}, "elapsed": 0.0, "params": 0, "out_dir": str(self.out)}


MANIFEST_FIELDS = [("step",), ("arrays",), ("sha256",), ("nbytes",), ("shapes",),
                   ("shapes", "model/wte.weight"), ("optimizer",), ("optimizer", "state"),
                   ("optimizer", "param_groups"), ("rng",), ("config",), ("config", "iters"),
                   ("model_config",), ("model_config", "n_embd"), ("model_config", "vocab_size"),
                   ("model_config", "pos"), ("tokenizer",), ("tokenizer", "chars"), ("extra",),
                   ("format",), ("version",)]
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**66), max_value=2**66),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=6)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(MANIFEST_FIELDS), value=JSON_VALUES,
       command=st.sampled_from(["sample", "trace", "resume"]))
def test_fuzzed_manifest_is_loaded_or_one_line(field, value, command, run, tmp_path_factory,
                                               capsys):
    """One manifest field replaced by an arbitrary JSON value: sample, trace and resume either
    work or print the one line (a damaged manifest never reaches a traceback)."""
    folder = Path(shutil.copytree(run, tmp_path_factory.mktemp("fuzz") / "run"))
    edit_manifest((field, value))(folder)
    argv = {"sample": ["sample", "--checkpoint", str(folder), "--tokens", "2"],
            "trace": ["trace", "--checkpoint", str(folder), "--text", "The", "--rows", "1"],
            "resume": ["train", "--resume", "--out", str(folder), "--iters", "3",
                       "--no-tune-allocator"]}[command]
    with reliability.fault("fuzzed checkpoint manifest (hypothesis)",
                           "loaded, or " + ONE_LINE, "test_cli_errors.py"):
        code, _, err = invoke(argv, capsys)
        if code != 0:
            assert_one_line(code, err, argv[0])
    shutil.rmtree(folder.parent)
