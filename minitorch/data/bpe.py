"""Byte-level BPE: merges learned from raw bytes; encode and decode token ids.

Text is first cut into chunks (letters, digits, other symbols, whitespace; an optional leading
space), so merges never cross a chunk. Training counts each distinct chunk once with its frequency
and updates pair counts incrementally per merge (no rescans). Ties go to the smallest pair of ids,
so the same corpus always gives the same merges. Ids 0..255 are the raw bytes, so any byte string
(UTF-8 or not) round-trips through encode_bytes/decode_bytes. A corpus file is trained on and
encoded block by block, each block cut where no chunk can straddle the cut, so the merges and
ids equal those of the whole file read at once. A chunk is at most MAX_CHUNK bytes (a longer run
is cut into pieces of that size), so training and encoding cost grows linearly with the input and
no token is longer: a merge list that builds a longer one is forged and refused.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator

import numpy as np

from .base import TokenizerError
from .corpus import Corpus

# Chunk pattern on bytes: a GPT-2-like split limited to ASCII classes; every byte is matched
# (non-ASCII bytes fall in the "other symbols" class), so the chunks always rejoin to the input.
SPLITS = {
    "ascii-v1": rb"'(?:s|t|re|ve|m|ll|d)| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+",
}
DEFAULT_SPLIT = "ascii-v1"
_CACHE_LIMIT = 200_000  # encoded chunks remembered before the memo is reset
# Encoding a chunk costs O(len x merges applied) and training rewrites a chunk per merge in it,
# so one megabytes-long run of letters would take hours: runs are cut into pieces this long.
MAX_CHUNK = 256
MAX_MERGES = (1 << 20) - 256  # a vocabulary of at most 2**20 ids


def split_chunks(data: bytes, split: str = DEFAULT_SPLIT) -> list[bytes]:
    """Cut bytes into the chunks BPE merges within, none over MAX_CHUNK bytes (a longer match
    is cut every MAX_CHUNK bytes from its start); b"".join(result) == data."""
    chunks = re.findall(SPLITS[split], data)
    if max(map(len, chunks), default=0) <= MAX_CHUNK:
        return chunks
    return [c[i:i + MAX_CHUNK] for c in chunks for i in range(0, len(c), MAX_CHUNK)]


def _byte_class(b: int) -> int:
    """0 whitespace, 1 letter, 2 digit, 3 other: the classes the chunk pattern separates."""
    if b in b" \t\n\r\f\v":
        return 0
    if 65 <= b <= 90 or 97 <= b <= 122:
        return 1
    return 2 if 48 <= b <= 57 else 3


def safe_cut(data: bytes, window: int = 1 << 16) -> int:
    """The last offset (within `window` of the end) where the chunk pattern always cuts; 0 if
    none. A cut at i is safe when data[i-1] is neither whitespace nor an apostrophe (no
    lookahead or contraction can join across it) and data[i] is of another class, so chunking
    data[:i] and data[i:] apart gives the same chunks as chunking data whole."""
    for i in range(len(data) - 1, max(len(data) - window, 0), -1):
        prev = data[i - 1]
        if prev != 39 and _byte_class(prev) != 0 and _byte_class(prev) != _byte_class(data[i]):
            return i
    return 0


def cut_blocks(blocks: Iterable[bytes], limit: int = 1 << 24) -> Iterator[bytes]:
    """Re-cut a byte stream at safe offsets (see safe_cut), so each piece can be chunked alone.
    A piece with no safe offset grows until `limit` bytes and is then cut anyway (only a
    megabytes-long run of one byte class, where merges could then differ from a whole read)."""
    carry = b""
    for block in blocks:
        carry += block
        cut = safe_cut(carry)
        if cut == 0 and len(carry) >= limit:
            cut = len(carry)
        if cut:
            yield carry[:cut]
            carry = carry[cut:]
    if carry:
        yield carry


def _as_bytes(text: str | bytes) -> bytes:
    if isinstance(text, str):
        return text.encode("utf-8")
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise TokenizerError(f"BPE works on str or bytes, got {type(text).__name__}")


def _merge(word: list[int], a: int, b: int, new: int) -> list[int]:
    """Replace every non-overlapping (a, b) in `word`, left to right, by `new`."""
    out, i, n = [], 0, len(word)
    while i < n:
        if i + 1 < n and word[i] == a and word[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def train_merges(data: bytes | Iterable[bytes], n_merges: int, min_frequency: int = 2,
                 split: str = DEFAULT_SPLIT) -> list[tuple[int, int]]:
    """Learn up to n_merges merges from `data` (bytes, or byte blocks cut by cut_blocks); stops
    early when no pair occurs min_frequency times.

    Each merge takes the most frequent adjacent pair (ties: smallest (a, b)). Only the chunks that
    contain it are rewritten, and their pair counts are adjusted by difference.
    """
    chunk_freq: Counter[bytes] = Counter()
    for block in [data] if isinstance(data, (bytes, bytearray)) else data:
        chunk_freq.update(split_chunks(bytes(block), split))
    words = [list(c) for c in chunk_freq]  # dict order = first occurrence: deterministic
    freqs = list(chunk_freq.values())
    counts: dict[tuple[int, int], int] = defaultdict(int)
    where: dict[tuple[int, int], set[int]] = defaultdict(set)  # pair -> chunks that may hold it
    for wi, w in enumerate(words):
        for pair in zip(w, w[1:], strict=False):
            counts[pair] += freqs[wi]
            where[pair].add(wi)
    heap = [(-c, a, b) for (a, b), c in counts.items()]  # max count first, then smallest pair
    heapq.heapify(heap)
    merges: list[tuple[int, int]] = []
    while heap and len(merges) < n_merges:
        neg, a, b = heapq.heappop(heap)
        if counts.get((a, b), 0) != -neg:
            continue  # stale entry: this pair's count changed after it was pushed
        if -neg < min_frequency:
            break
        new = 256 + len(merges)
        merges.append((a, b))
        touched: set[tuple[int, int]] = set()
        for wi in sorted(where.pop((a, b))):
            w, f = words[wi], freqs[wi]
            merged = _merge(w, a, b, new)
            if len(merged) == len(w):
                continue  # the pair left this chunk in an earlier merge
            for pair in zip(w, w[1:], strict=False):
                counts[pair] -= f
                touched.add(pair)
            for pair in zip(merged, merged[1:], strict=False):
                counts[pair] += f
                where[pair].add(wi)
                touched.add(pair)
            words[wi] = merged
        for pair in touched:
            c = counts.get(pair, 0)
            if c > 0:
                heapq.heappush(heap, (-c, *pair))
            else:
                counts.pop(pair, None)
    return merges


class BPETokenizer:
    """Byte-level BPE tokenizer (same interface as the char tokenizer: encode/decode/vocab_size).

    Args:
        merges: (a, b) pairs; merge i creates id 256 + i from ids a, b < 256 + i.
        split: name of the chunk pattern in SPLITS.
    """

    kind = "bpe"

    def __init__(self, merges: Iterable[tuple[int, int]], split: str = DEFAULT_SPLIT):
        if not isinstance(split, str) or split not in SPLITS:
            raise TokenizerError(f"unknown BPE split pattern {split!r}; known: {sorted(SPLITS)}")
        self.split = split
        self.merges = [(int(a), int(b)) for a, b in merges]
        if len(self.merges) > MAX_MERGES:
            raise TokenizerError(f"BPE tokenizer has {len(self.merges):,} merges, more than "
                                 f"{MAX_MERGES:,} (a vocabulary of 2**20 ids)")
        self.vocab = [bytes([i]) for i in range(256)]  # id -> the bytes it stands for
        for i, (a, b) in enumerate(self.merges):
            if not (0 <= a < 256 + i and 0 <= b < 256 + i):
                raise TokenizerError(f"BPE merge {i} = ({a}, {b}) uses an id not yet defined "
                                 f"(must be < {256 + i})")
            n = len(self.vocab[a]) + len(self.vocab[b])  # measured before anything is joined
            if n > MAX_CHUNK:
                raise TokenizerError(f"BPE merge {i} = ({a}, {b}) makes a {n:,}-byte token; no "
                                     f"chunk is longer than {MAX_CHUNK} bytes, so the merge list "
                                     "is forged or corrupted")
            self.vocab.append(self.vocab[a] + self.vocab[b])
        self.ranks = {pair: i for i, pair in enumerate(self.merges)}
        self._memo: dict[bytes, list[int]] = {}

    @classmethod
    def train(cls, text: str | bytes | Corpus, vocab_size: int, min_frequency: int = 2,
              split: str = DEFAULT_SPLIT) -> BPETokenizer:
        """Learn merges from a corpus (text, any bytes, or a Corpus file read in blocks) until
        vocab_size ids exist (or no pair is frequent enough)."""
        if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 256:
            raise TokenizerError(f"byte-level BPE needs an integer vocab_size >= 256, got "
                                 f"{vocab_size!r}")
        if vocab_size > 256 + MAX_MERGES:
            raise TokenizerError(f"byte-level BPE takes a vocab_size <= {256 + MAX_MERGES:,}, "
                                 f"got {vocab_size:,}")
        data = cut_blocks(text.blocks()) if isinstance(text, Corpus) else _as_bytes(text)
        return cls(train_merges(data, vocab_size - 256, min_frequency, split), split)

    @property
    def vocab_size(self) -> int:
        return 256 + len(self.merges)

    def _encode_chunk(self, chunk: bytes) -> list[int]:
        ids = list(chunk)
        while len(ids) > 1:  # apply the lowest-ranked merge present until none applies
            pairs = zip(ids, ids[1:], strict=False)
            rank, pair = min((self.ranks.get(p, len(self.ranks)), p) for p in pairs)
            if rank == len(self.ranks):
                break
            ids = _merge(ids, *pair, 256 + rank)
        return ids

    def encode_bytes(self, data: bytes) -> list[int]:
        out: list[int] = []
        memo = self._memo
        for chunk in split_chunks(data, self.split):
            ids = memo.get(chunk)
            if ids is None:
                if len(memo) >= _CACHE_LIMIT:
                    memo.clear()
                ids = memo[chunk] = self._encode_chunk(chunk)
            out.extend(ids)
        return out

    def encode_stream(self, corpus: Corpus) -> Iterator[np.ndarray]:
        """The ids of a corpus file's bytes, block by block (int64 arrays; 1 MiB reads keep the
        per-block Python lists small)."""
        for block in cut_blocks(corpus.blocks(1 << 20)):
            yield np.array(self.encode_bytes(block), dtype=np.int64)

    def encode(self, text: str | bytes) -> list[int]:
        """Token ids of the UTF-8 bytes of `text` (or of raw bytes)."""
        return self.encode_bytes(_as_bytes(text))

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        ids = [int(i) for i in ids]
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:
            raise TokenizerError(f"token ids {bad[:5]} out of range [0, {self.vocab_size})")
        return b"".join([self.vocab[i] for i in ids])

    def decode(self, ids: Iterable[int]) -> str:
        """Text of the ids; a byte sequence that is not valid UTF-8 decodes to U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "split": self.split, "merges": [list(m) for m in self.merges]}

    @classmethod
    def from_dict(cls, d: dict) -> BPETokenizer:
        d = d if isinstance(d, dict) else {}
        merges = d.get("merges")
        if d.get("kind") != cls.kind or not isinstance(merges, list):
            raise TokenizerError(f"not a saved BPE tokenizer (kind={d.get('kind')!r}, merges of "
                                 f"type {type(merges).__name__})")
        if not all(isinstance(m, (list, tuple)) and len(m) == 2
                   and all(isinstance(i, int) and not isinstance(i, bool) for i in m)
                   for m in merges):
            raise TokenizerError("saved BPE merges must be [a, b] pairs of ids")
        return cls([tuple(m) for m in merges], d.get("split", DEFAULT_SPLIT))

