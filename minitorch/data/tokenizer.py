"""Tokenizers share one small interface so the trainer, checkpoints and sampler never care which
one they hold: encode(str) -> list[int], decode(ids) -> str, vocab_size, to_dict() (JSON-safe,
with a "kind" field) and from_dict(). load_tokenizer() dispatches on "kind"; the byte-level BPE
tokenizer lives in bpe.py and is imported only when asked for.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class TokenizerError(ValueError):
    """Text or ids a tokenizer cannot handle, or a saved tokenizer that is malformed."""


class CharTokenizer:
    """One token per distinct character of the corpus, ids in sorted character order.

    Args:
        chars: the vocabulary, one character per id (no duplicates).
    """

    kind = "char"

    def __init__(self, chars: str):
        if not chars:
            raise TokenizerError("CharTokenizer needs at least one character")
        if len(set(chars)) != len(chars):
            dupes = sorted({c for c in chars if chars.count(c) > 1})
            raise TokenizerError(f"CharTokenizer: duplicate characters {dupes!r}")
        self.chars = chars
        self.stoi = {c: i for i, c in enumerate(chars)}

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """The vocabulary of every distinct character in `text`, sorted by code point."""
        return cls("".join(sorted(set(text))))

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        """Text -> ids; a character outside the vocabulary is an error that names it and where."""
        stoi = self.stoi
        try:
            return [stoi[c] for c in text]
        except KeyError as e:
            bad = e.args[0]
            pos = text.index(bad)
            raise TokenizerError(
                f"unknown character {bad!r} (U+{ord(bad):04X}) at position {pos}: "
                f"not in this tokenizer's {self.vocab_size}-character vocabulary"
            ) from None

    def decode(self, ids: Iterable[int]) -> str:
        """Ids -> text; an id outside [0, vocab_size) is an error that names it."""
        out = []
        for pos, i in enumerate(ids):
            i = int(i)
            if not 0 <= i < self.vocab_size:
                raise TokenizerError(f"token id {i} at position {pos} is outside "
                                     f"[0, {self.vocab_size})")
            out.append(self.chars[i])
        return "".join(out)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "chars": self.chars}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CharTokenizer:
        if d.get("kind") != cls.kind or not isinstance(d.get("chars"), str):
            raise TokenizerError(f"not a saved char tokenizer (kind={d.get('kind')!r}, "
                                 f"chars of type {type(d.get('chars')).__name__})")
        return cls(d["chars"])


def load_tokenizer(d: dict[str, Any]):
    """Rebuild a tokenizer from its to_dict() form, dispatching on d["kind"]."""
    kind = d.get("kind") if isinstance(d, dict) else None
    if kind == "char":
        return CharTokenizer.from_dict(d)
    if kind == "bpe":
        from .bpe import BPETokenizer  # lazy: only runs with a BPE checkpoint

        return BPETokenizer.from_dict(d)
    raise TokenizerError(f"unknown tokenizer kind {kind!r} (expected 'char' or 'bpe')")


def build_tokenizer(kind: str, text: str, vocab_size: int | None = None):
    """A new tokenizer of `kind` fitted to `text` ("char", or "bpe" trained to vocab_size)."""
    if kind == "char":
        return CharTokenizer.from_text(text)
    if kind == "bpe":
        from .bpe import BPETokenizer

        return BPETokenizer.train(text, vocab_size)
    raise TokenizerError(f"unknown tokenizer kind {kind!r} (expected 'char' or 'bpe')")
