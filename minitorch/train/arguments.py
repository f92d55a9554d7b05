"""The argument parser of the command-line tools (`minitorch`, minitorch.train.summary): one
error line instead of a usage block, each default shown once in --help, the closest valid names
of a mistyped flag, and the check that an output path can be written. It imports no command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from .config import ConfigError, did_you_mean


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default once: not for a flag (store_true/store_false: its help says
    what it does, the dest's default would read as the flag's state), nor for a required
    option, nor for None (no value: the help says what the option does), nor a second time
    when the help already gives one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (action.nargs == 0 or action.required or action.default is None
                or "default: " in text):
            return text
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """argparse with the one error line (`<prog>: error: ... (see <prog> --help)`, exit 2)
    instead of a usage block, every default shown once in --help, and the closest valid names
    of a mistyped command or flag (Python 3.11's argparse has no suggest_on_error)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(**kwargs)
        self._given: list[str] = []

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def parse_args(self, args=None, namespace=None):
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self.refuse(extra)  # the unknown flags with their closest valid ones
        return parsed

    def error(self, message: str) -> NoReturn:
        unknown = self.unknown_flags(self._given)
        if unknown and message.startswith("the following arguments are required"):
            message = self.unrecognized(unknown)  # --checkpont DIR: the typo is the cause
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def _check_value(self, action: argparse.Action, value) -> None:
        if action.choices is None or value in action.choices or not isinstance(value, str):
            return super()._check_value(action, value)
        hint = did_you_mean(value, {c: repr(c) for c in action.choices})
        choices = ", ".join(map(repr, action.choices))
        raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint}; choose from "
                                             f"{choices}")

    def long_flags(self) -> list[str]:
        """Every --flag this parser takes (argparse keeps them in _option_string_actions)."""
        return [s for s in self._option_string_actions if s.startswith("--")]

    def value_flags(self) -> list[str]:
        """Every option string of an option that takes a value (not a flag such as --help)."""
        return [s for a in self._actions if a.option_strings and a.nargs != 0
                for s in a.option_strings]

    def unknown_flags(self, args: list[str]) -> list[str]:
        """The options in `args` this parser does not take; as for argparse, a negative number,
        "--" and a word with a space in it ("-- hello") are values."""
        known = set(self._option_string_actions)
        return [a for a in args if a.startswith("-") and a.split("=", 1)[0] not in known
                and a != "--" and " " not in a and not _is_number(a)]

    def unrecognized(self, extra: list[str]) -> str:
        """The error for arguments this command does not take: each unknown flag with its
        closest valid flags, else the stray values."""
        flags = {f: f for f in self.long_flags()}
        unknown = self.unknown_flags(extra)
        if not unknown:
            return f"unrecognized argument{'s' if len(extra) > 1 else ''} " + \
                ", ".join(map(repr, extra))
        named = [f"{a.split('=', 1)[0]}{did_you_mean(a.split('=', 1)[0], flags)}"
                 for a in unknown]
        return f"unrecognized argument{'s' if len(named) > 1 else ''} {', '.join(named)}"

    def refuse(self, extra: list[str]) -> NoReturn:
        """Exit with the error line for arguments this command does not take (as error())."""
        self.error(self.unrecognized(extra))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def check_writable_file(path: str, flag: str, error: type[Exception] = ConfigError) -> None:
    """`error` unless `path` can be written as a file (checked before the work is done)."""
    p = Path(path)
    if p.is_dir():
        raise error(f"{flag} {path} is a folder; give a file path")
    if not p.parent.is_dir():
        raise error(f"{flag} {path}: folder {p.parent} does not exist")
