"""A mistyped command, flag or config key (issue 36): the one error line (`minitorch <command>:
error: ...`, exit 2) names the closest valid name(s), for every registered subcommand, and no
name when nothing is close; `minitorch run SCRIPT ARGS` hands ARGS to the script untouched.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from minitorch import cli
from minitorch.train.config import did_you_mean
from verification.test_cli_errors import assert_one_line, invoke

CHOICES = ", ".join(map(repr, cli.COMMANDS))  # the registered subcommands, in --help's order


def assert_one_line_top(code: int, err: str) -> None:
    assert code == 2 and err.count("\n") == 1 and err.startswith("minitorch: error: "), err


@pytest.mark.parametrize("argv, line", [
    (["trian"], f"minitorch: error: argument COMMAND: invalid choice: 'trian' (did you mean "
                f"'train'?); choose from {CHOICES} (see minitorch --help)"),
    (["smaple", "--checkpoint", "x"], "minitorch: error: argument COMMAND: invalid choice: "
     f"'smaple' (did you mean 'sample'?); choose from {CHOICES} (see minitorch --help)"),
    (["trcae"], f"minitorch: error: argument COMMAND: invalid choice: 'trcae' (did you mean "
                f"'trace'?); choose from {CHOICES} (see minitorch --help)"),
    # train: config keys, plain, dashed and dotted, and train's own flags
    (["train", "--nlayer", "2"],
     "minitorch train: error: unknown config key 'nlayer' (did you mean 'n_layer'?)"),
    (["train", "--n-layr", "2"],
     "minitorch train: error: unknown config key 'n_layr' (did you mean 'n_layer'?)"),
    (["train", "--model.n_layr=2"],
     "minitorch train: error: unknown config key 'model.n_layr' (did you mean 'model.n_layer'?)"),
    (["train", "--modle.n_layer=2"], "minitorch train: error: unknown config key "
     "'modle.n_layer' (did you mean 'model.n_layer'?)"),
    (["train", "--temprature", "0.8"], None),  # sample's flag, nothing close in train: no hint
    (["train", "--itres", "3", "--lr", "1e-3"],
     "minitorch train: error: unknown config key 'itres' (did you mean 'iters'?)"),
    (["train", "--resme", "--out", "x"],  # a typo, not a key missing its value
     "minitorch train: error: unknown option --resme (did you mean --resume?)"),
    (["train", "--overwirte"],
     "minitorch train: error: unknown option --overwirte (did you mean --overwrite?)"),
    (["train", "--no-tune-alocator"], "minitorch train: error: unknown option "
     "--no-tune-alocator (did you mean --no-tune-allocator?)"),
    # sample, trace, run: argparse flags
    (["sample", "--checkpoint", "x", "--temprature", "0.8"],
     "minitorch sample: error: unrecognized argument --temprature (did you mean --temperature?)"
     " (see minitorch sample --help)"),  # ends as --checkpont's below: one helper builds both
    (["sample", "--checkpoint", "x", "--topk=3"],  # both spellings of top_k: offered once
     "minitorch sample: error: unrecognized argument --topk (did you mean --top_k?) (see "
     "minitorch sample --help)"),
    (["sample", "--checkpoint", "x", "--temprature=0.8", "--tokns", "3"],
     "minitorch sample: error: unrecognized arguments --temprature (did you mean --temperature?)"
     ", --tokns (did you mean --tokens?) (see minitorch sample --help)"),
    (["sample", "--checkpont", "x"],  # the typo, not the required flag it hides, is named
     "minitorch sample: error: unrecognized argument --checkpont (did you mean --checkpoint?) "
     "(see minitorch sample --help)"),
    (["trace", "--checkpoint", "x", "--txt", "hello"], "minitorch trace: error: unrecognized "
     "argument --txt (did you mean --text?) (see minitorch trace --help)"),
    (["trace", "--checkpoint", "x", "--text", "hello", "--row", "3"],
     "minitorch trace: error: unrecognized argument --row (did you mean --rows?) (see "
     "minitorch trace --help)"),
    (["run", "--nprc", "2", "script.py"],
     "minitorch run: error: unrecognized argument --nprc (did you mean --nproc?) (see "
     "minitorch run --help)"),
    (["run", "--hostfil", "hosts", "script.py"],
     "minitorch run: error: unrecognized argument --hostfil (did you mean --hostfile?) (see "
     "minitorch run --help)"),
])
def test_mistyped_name_gets_the_closest_valid_name(argv, line, capsys):
    code, _, err = invoke(argv, capsys)
    if argv[0] in cli.COMMANDS:
        assert_one_line(code, err, argv[0])
    else:
        assert_one_line_top(code, err)
    if line is None:
        assert "did you mean" not in err, err
    else:
        assert err == line + "\n"


@pytest.mark.parametrize("argv, line", [
    (["frobnicate"], f"minitorch: error: argument COMMAND: invalid choice: 'frobnicate'; choose "
                     f"from {CHOICES} (see minitorch --help)"),
    (["train", "--banana", "3"], None),
    (["train", "--model.banana=3"], None),
    (["train", "--learning_rate", "3"], None),
    (["sample", "--checkpoint", "x", "--bogus", "1"],
     "minitorch sample: error: unrecognized argument --bogus (see minitorch sample --help)"),
    (["sample", "--checkpoint", "x", "banana"],
     "minitorch sample: error: unrecognized argument 'banana' (see minitorch sample --help)"),
    (["trace", "--checkpoint", "x", "--text", "hi", "--frobnicate"],
     "minitorch trace: error: unrecognized argument --frobnicate (see minitorch trace --help)"),
    (["run", "--verbose", "script.py"],
     "minitorch run: error: unrecognized argument --verbose (see minitorch run --help)"),
])
def test_nothing_close_gets_no_hint(argv, line, capsys):
    """No bogus hint: a name unlike every valid one is named alone (train lists its keys)."""
    code, _, err = invoke(argv, capsys)
    if argv[0] in cli.COMMANDS:
        assert_one_line(code, err, argv[0])
    else:
        assert_one_line_top(code, err)
    assert "did you mean" not in err, err
    if line is not None:
        assert err == line + "\n"
    else:
        key = argv[1][2:].split("=")[0]
        assert err.startswith(f"minitorch train: error: unknown config key '{key}'. TrainConfig "
                              "keys: ['batch_size', "), err


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser, _ = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _typo(flag: str) -> str:
    """The flag with one interior letter dropped (--temperature -> --temperture)."""
    name = flag[2:]
    i = len(name) // 2
    return "--" + name[:i] + name[i + 1:]


def _every_long_flag():
    for cmd, p in _subparsers().items():
        for a in p._actions:
            for flag in a.option_strings:
                if flag.startswith("--") and len(flag) >= 7:  # "--" + 5 letters: a typo of
                    yield cmd, flag, a.option_strings      # a shorter name is anyone's guess


FLAGS = list(_every_long_flag())


@pytest.mark.parametrize("cmd, flag, spellings", FLAGS, ids=[f"{c} {f}" for c, f, _ in FLAGS])
def test_every_flag_of_every_command_is_suggested_for_its_typo(cmd, flag, spellings, capsys):
    """Each registered subcommand, each of its long flags: a one-letter typo is one line that
    names that flag or another spelling of it (--top-k: --top_k; train's flags are config
    keys, named as 'key' or as --flag)."""
    p = _subparsers()[cmd]
    argv = [cmd]
    for a in p._actions:  # the required flags the typo does not stand for
        if a.required and a.option_strings and flag not in a.option_strings:
            argv += [a.option_strings[0], "x"]
    argv += [_typo(flag), "1"]
    if cmd == "run":
        argv.append("script.py")  # run's own flags come before SCRIPT
    code, _, err = invoke(argv, capsys)
    assert_one_line(code, err, cmd, "did you mean")
    offered = set(err.split("did you mean ", 1)[1].split("?)", 1)[0].split(" or "))
    names = {*spellings, *(f"'{s[2:].replace('-', '_')}'" for s in spellings)}
    assert offered & names, (flag, err)


def test_run_passes_the_scripts_own_arguments_untouched(tmp_path):
    """Mistyped-looking arguments after SCRIPT are the script's: nothing is corrected or
    refused (a real process: `run` executes the script)."""
    script = tmp_path / "show.py"
    script.write_text("import sys\nprint(sys.argv[1:])\n")
    args = ["--temprature", "3", "--nprc=2", "-x", "--checkpont", "trian"]
    proc = subprocess.run([sys.executable, "-m", "minitorch", "run", str(script), *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{args}\n" and proc.stderr == ""


def test_mistyped_command_in_a_real_process():
    proc = subprocess.run([sys.executable, "-m", "minitorch", "trian", "--iters", "3"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"minitorch: error: argument COMMAND: invalid choice: 'trian' (did "
                           f"you mean 'train'?); choose from {CHOICES} (see minitorch --help)\n")


@pytest.mark.parametrize("word, names, hint", [
    ("nlayer", ["n_layer", "n_head"], " (did you mean n_layer?)"),
    ("N_LAYR", ["n_layer"], " (did you mean n_layer?)"),  # case and dashes do not count
    ("top-k", ["top_k"], ""),  # the same name (another spelling) is not a typo of it
    ("topk", ["--top_k", "--top-k"], " (did you mean --top_k?)"),  # an alias is offered once
    ("trac", ["train", "trace"], " (did you mean trace?)"),
    ("ab", ["ac", "bb"], ""),  # 0.5 each: not close enough
    ("runs", ["run1", "run2", "rna"], " (did you mean run1 or run2?)"),  # tied: both named
    ("frobnicate", ["train", "sample", "trace", "run"], ""),
])
def test_did_you_mean_names_the_best_match_or_nothing(word, names, hint):
    assert did_you_mean(word, {n: n for n in names}) == hint
