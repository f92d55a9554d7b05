"""`minitorch --help` and every registered command's --help: the top-level description names
every command in the registry, no option shows its default twice, and a flag (store_true or
store_false) shows no default, which would read as the flag's own state."""

from __future__ import annotations

import argparse

import pytest

from minitorch import cli


def _help(argv: list[str], capsys) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        cli.main([*argv, "--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


def _squash(text: str) -> str:
    return "".join(text.split())  # argparse wraps lines (at hyphens too)


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser, _ = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_help_top_level_names_every_registered_command(capsys, monkeypatch):
    text = _help([], capsys)
    parser, _ = cli.build_parser()
    assert _squash(parser.description) in _squash(text)
    for name in cli.COMMANDS:
        assert f"`{name}`" in parser.description, (name, parser.description)
    # the list comes from the registry: a command registered now is listed too
    monkeypatch.setitem(cli.COMMANDS, "extra", ("a command added later", lambda p: None))
    assert "`extra`" in cli.build_parser()[0].description


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_help_shows_each_default_once_and_none_for_flags(name, capsys):
    text = _squash(_help([name], capsys))
    sub = _subparsers()[name]
    checked = 0
    for action in sub._actions:
        if not action.help or action.help == argparse.SUPPRESS:
            continue
        shown = sub._get_formatter()._expand_help(action)
        assert _squash(shown) in text, (action.option_strings, shown)  # what --help prints
        flags = "/".join(action.option_strings) or action.dest
        assert shown.count("(default: ") <= 1, f"{name} {flags}: {shown!r}"
        if action.required:  # a required option has no default to show
            assert "default: " not in shown, f"{name} {flags}: {shown!r}"
        if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction):
            assert "default: " not in shown, f"{name} {flags}: {shown!r}"
            checked += 1
    assert checked == sum(isinstance(a, argparse._StoreTrueAction | argparse._StoreFalseAction)
                          for a in sub._actions)


def _entry(text: str, flag: str, following: str) -> str:
    """The help of `flag` in a --help text (up to the next option's name), on one line."""
    return " ".join(text.split(f"  {flag}", 1)[1].split(f"  {following}", 1)[0].split())


def test_help_texts_from_the_walkthrough(capsys):
    """The three the README walkthrough found, read as printed."""
    train = _entry(_help(["train"], capsys), "--no-tune-allocator", "--ranks")
    assert train.startswith("leave glibc's allocator alone") and "default: True" not in train
    assert "default: True" not in _entry(_help(["sample"], capsys), "--no-cache", "-")
    rows = _entry(_help(["trace"], capsys) + "  END", "--rows", "END")
    assert rows == "ROWS print at most this many op rows (default: all)"
