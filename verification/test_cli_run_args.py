"""`minitorch run`'s own options before SCRIPT: which of them take a value comes from the run
parser itself (not a hand-kept list), and with no SCRIPT only SCRIPT is named as required."""

from __future__ import annotations

import argparse

import pytest

from minitorch import cli
from verification.test_cli_errors import assert_one_line, invoke


def _run_parser() -> argparse.ArgumentParser:
    parser, _ = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["run"]


def test_run_value_options_come_from_its_parser():
    p = _run_parser()
    flags = p.value_flags()
    assert {"--nproc", "--nproc-per-node", "--nproc_per_node", "--hostfile"} <= set(flags)
    assert "--help" not in flags  # a flag: SCRIPT follows it directly
    # an option added to run later is known at once: its value is not taken for SCRIPT
    p.add_argument("--tag", metavar="NAME", help="an option run does not have today")
    for flag in p.value_flags():
        argv = [flag, "v", "script.py", "--", "--a", "b"]
        assert cli._script_args(argv, p.value_flags()) == ["--", "--a", "b"], flag
    assert cli._script_args(["--nproc=2", "script.py", "x"], p.value_flags()) == ["x"]
    assert cli._script_args(["-h", "script.py", "x"], p.value_flags()) == ["x"]


def test_run_without_a_script_names_only_the_script(capsys):
    code, _, err = invoke(["run"], capsys)
    assert_one_line(code, err, "run")
    assert err == ("minitorch run: error: the following arguments are required: script (see "
                   "minitorch run --help)\n")


@pytest.mark.parametrize("argv", [["run", "--nproc", "2"], ["run", "--hostfile", "h"]])
def test_run_options_without_a_script_name_the_script(argv, capsys):
    code, _, err = invoke(argv, capsys)
    assert_one_line(code, err, "run")
    assert err.endswith("required: script (see minitorch run --help)\n"), err
