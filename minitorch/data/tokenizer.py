"""Tokenizers by kind: build one for a corpus, or rebuild a saved one from its to_dict() form.

The kinds are CharTokenizer (char.py) and byte-level BPETokenizer (bpe.py); both follow the
Tokenizer protocol in base.py.
"""

from __future__ import annotations

from typing import Any

from .base import Tokenizer, TokenizerError
from .bpe import BPETokenizer
from .char import CharTokenizer
from .corpus import Corpus

KINDS: dict[str, Any] = {"char": CharTokenizer, "bpe": BPETokenizer}


def load_tokenizer(d: dict[str, Any]) -> Tokenizer:
    """Rebuild a tokenizer from its to_dict() form, dispatching on d["kind"]."""
    kind = d.get("kind") if isinstance(d, dict) else None
    if not isinstance(kind, str) or kind not in KINDS:
        raise TokenizerError(f"unknown tokenizer kind {kind!r} (expected 'char' or 'bpe')")
    return KINDS[kind].from_dict(d)


def build_tokenizer(kind: str, source: str | bytes | Corpus,
                    vocab_size: int | None = None) -> Tokenizer:
    """A new tokenizer of `kind` fitted to `source` (text, bytes, or a Corpus read in blocks):
    "char", or "bpe" trained to vocab_size ids."""
    if kind == "char":
        if isinstance(source, Corpus):
            return CharTokenizer.from_corpus(source)
        if isinstance(source, bytes):
            raise TokenizerError("the char tokenizer reads text, not bytes (use 'bpe')")
        return CharTokenizer.from_text(source)
    if kind == "bpe":
        return BPETokenizer.train(source, vocab_size)
    raise TokenizerError(f"unknown tokenizer kind {kind!r} (expected 'char' or 'bpe')")
