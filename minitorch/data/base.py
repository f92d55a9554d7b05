"""What every tokenizer offers (the Tokenizer protocol) and the errors of the data layer.

The trainer, checkpoints and samplers hold a Tokenizer and never care which kind: encode/decode,
vocab_size, to_dict() (JSON-safe, with a "kind") and, for corpora too large to hold, a streaming
fit and encode over a Corpus. Errors are one complete line: which file, what is wrong, where.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np


class DataError(ValueError):
    """Input data that cannot be used: a corpus file or a tokenizer's input or saved form."""


class TokenizerError(DataError):
    """Text or ids a tokenizer cannot handle, or a saved tokenizer that is malformed."""


class CorpusError(DataError):
    """A corpus file that is missing, unreadable, empty, not decodable, or too short."""


@runtime_checkable
class Tokenizer(Protocol):
    """The interface shared by CharTokenizer and BPETokenizer."""

    kind: ClassVar[str]  # the "kind" field of to_dict(), dispatched on by load_tokenizer

    @property
    def vocab_size(self) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Iterable[int]) -> str: ...

    def encode_stream(self, corpus: Any) -> Iterator[np.ndarray]:
        """The corpus's token ids, block by block (bounded memory), as 1-D integer arrays."""
        ...

    def to_dict(self) -> dict[str, Any]: ...
