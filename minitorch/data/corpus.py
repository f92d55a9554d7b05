"""A corpus file (or the embedded default text), read in blocks so its size never has to fit in
memory: its sha256 and size, raw byte blocks, and strictly decoded UTF-8 text blocks. Every
problem with the file is a CorpusError naming it and what is wrong.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .base import CorpusError

DEFAULT_CORPUS = Path(__file__).with_name("default_corpus.txt")
BLOCK = 1 << 22  # bytes read at a time: 4 MiB


@dataclass(frozen=True)
class Corpus:
    """A readable, non-empty corpus file, identified by the sha256 of its bytes.

    Use Corpus.open(path); path None is the embedded default corpus.
    """

    path: Path
    nbytes: int
    sha256: str
    label: str  # how errors name it: the path, or "the embedded default corpus"

    @classmethod
    def open(cls, path: str | Path | None = None) -> Corpus:
        p = DEFAULT_CORPUS if path is None else Path(path)
        label = "the embedded default corpus" if path is None else f"corpus file {p}"
        if not p.exists():
            raise CorpusError(f"corpus file not found: {p}")
        if p.is_dir():
            raise CorpusError(f"{label} is a folder, not a text file")
        try:  # stat, not open: opening a FIFO blocks until someone writes to it
            mode = os.stat(p).st_mode
        except OSError as e:
            raise CorpusError(f"{label} cannot be read: {e.strerror or e}") from None
        if not stat.S_ISREG(mode):  # /dev/zero, a FIFO, a socket: endless or blocking reads
            raise CorpusError(f"{label} is not a regular file (a device, FIFO or socket); "
                              "give a text file")
        h, n = hashlib.sha256(), 0
        try:
            with open(p, "rb") as f:
                while block := f.read(BLOCK):
                    h.update(block)
                    n += len(block)
        except OSError as e:
            raise CorpusError(f"{label} cannot be read: {e.strerror or e}") from None
        if n == 0:
            raise CorpusError(f"{label} is empty")
        return cls(p, n, h.hexdigest(), label)

    def blocks(self, size: int = BLOCK) -> Iterator[bytes]:
        """The file's bytes, `size` at a time."""
        try:
            with open(self.path, "rb") as f:
                while block := f.read(size):
                    yield block
        except OSError as e:
            raise CorpusError(f"{self.label} cannot be read: {e.strerror or e}") from None

    def text_blocks(self, size: int = BLOCK) -> Iterator[str]:
        """The file decoded as UTF-8 (no newline translation), one block of text at a time.

        Raises:
            CorpusError: at the first invalid byte, naming its offset.
        """
        decoder = codecs.getincrementaldecoder("utf-8")("strict")
        offset = 0
        for block in self.blocks(size):
            try:
                text = decoder.decode(block)
            except UnicodeDecodeError as e:
                raise self._not_utf8(offset + e.start, e) from None
            offset += len(block)
            if text:
                yield text
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as e:
            raise self._not_utf8(offset - len(e.object) + e.start, e) from None

    def read_bytes(self) -> bytes:
        return b"".join(self.blocks())

    def read_text(self) -> str:
        return "".join(self.text_blocks())

    def _not_utf8(self, at: int, e: UnicodeDecodeError) -> CorpusError:
        return CorpusError(f"{self.label} is not valid UTF-8 text at byte {at:,} ({e.reason}); "
                           "the char tokenizer reads UTF-8 text only (byte-level BPE, "
                           "--tokenizer bpe, takes any bytes)")


def read_corpus(path: str | Path | None = None) -> str:
    """All of the text at `path` (UTF-8), or of the embedded default corpus when path is None."""
    return Corpus.open(path).read_text()
