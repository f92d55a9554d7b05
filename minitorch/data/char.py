"""The character tokenizer: one id per distinct character of the corpus, in code-point order.

Encoding a corpus streams it through a code-point lookup table (vectorized), so a file of any
size is encoded in bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from .base import TokenizerError
from .corpus import Corpus

_MAX_CODE_POINT = 0x10FFFF


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
        lone = [c for c in chars if 0xD800 <= ord(c) <= 0xDFFF]
        if lone:  # no UTF-8 text holds one, and printing it raises UnicodeEncodeError
            raise TokenizerError(f"CharTokenizer: the vocabulary holds a lone surrogate "
                                 f"U+{ord(lone[0]):04X}, which no UTF-8 text contains")
        self.chars = chars
        self.stoi = {c: i for i, c in enumerate(chars)}
        self._table: np.ndarray | None = None  # code point -> id (-1: not in the vocabulary)

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """The vocabulary of every distinct character in `text`, sorted by code point."""
        return cls("".join(sorted(set(text))))

    @classmethod
    def from_corpus(cls, corpus: Corpus) -> CharTokenizer:
        """The vocabulary of a corpus file, read block by block."""
        seen: set[str] = set()
        for text in corpus.text_blocks():
            seen.update(text)
        return cls("".join(sorted(seen)))

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        """Text -> ids; a character outside the vocabulary is an error that names it and where."""
        stoi = self.stoi
        try:
            return [stoi[c] for c in text]
        except KeyError as e:
            raise self._unknown(e.args[0], text.index(e.args[0])) from None

    def encode_stream(self, corpus: Corpus) -> Iterator[np.ndarray]:
        """The corpus's ids block by block (int32 arrays), through a code-point table."""
        table = self._lookup()
        done = 0
        for text in corpus.text_blocks():
            points = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")  # (n,) code points
            ids = table[points]
            bad = np.flatnonzero(ids < 0)
            if bad.size:
                pos = int(bad[0])
                raise self._unknown(text[pos], done + pos, corpus.label)
            done += len(text)
            yield ids

    def _lookup(self) -> np.ndarray:
        if self._table is None:
            table = np.full(_MAX_CODE_POINT + 1, -1, dtype=np.int32)
            table[[ord(c) for c in self.chars]] = np.arange(len(self.chars), dtype=np.int32)
            self._table = table
        return self._table

    def _unknown(self, ch: str, pos: int, where: str | None = None) -> TokenizerError:
        return TokenizerError(
            f"{where + ': ' if where else ''}unknown character {ch!r} (U+{ord(ch):04X}) at "
            f"position {pos}: not in this tokenizer's {self.vocab_size}-character vocabulary")

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
        d = d if isinstance(d, dict) else {}
        if d.get("kind") != cls.kind or not isinstance(d.get("chars"), str):
            raise TokenizerError(f"not a saved char tokenizer (kind={d.get('kind')!r}, "
                                 f"chars of type {type(d.get('chars')).__name__})")
        return cls(d["chars"])
