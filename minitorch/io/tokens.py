"""Token files: a corpus encoded once, block by block, into a flat uint16/uint32 file beside the
run, named by the corpus's sha256 and the tokenizer's, and memory-mapped for batches; so a corpus
of any size trains in bounded memory and a resumed run reuses its encoding.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from ..data import Corpus, Tokenizer, check_splits, train_val_split
from .atomic import atomic_writer


def token_dtype(vocab_size: int) -> np.dtype:
    """The smallest unsigned dtype that holds every id."""
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


def token_path(corpus: Corpus, tokenizer: Tokenizer, folder: str | Path) -> Path:
    """folder/tokens-<corpus sha256>-<tokenizer sha256>.<dtype>: the cache key is the name."""
    spec = json.dumps(tokenizer.to_dict(), sort_keys=True).encode()
    key = f"{corpus.sha256[:16]}-{hashlib.sha256(spec).hexdigest()[:16]}"
    return Path(folder) / f"tokens-{key}.{token_dtype(tokenizer.vocab_size).name}"


def token_file(corpus: Corpus, tokenizer: Tokenizer, folder: str | Path) -> np.memmap:
    """The corpus's ids as a read-only memmap, encoding them into folder first if needed.

    The file is written atomically (a killed encode leaves no token file, only a temp file that
    the next successful encode removes); token files of other corpora or tokenizers in the
    folder are removed once this one exists. Callers hold the run folder (the trainer's lock).
    """
    path, ids = _encoded(corpus, tokenizer, folder)
    _remove_others(path)
    return ids


def _encoded(corpus: Corpus, tokenizer: Tokenizer, folder: str | Path
             ) -> tuple[Path, np.memmap]:
    """(path, ids): token_file without removing the folder's other token files."""
    path = token_path(corpus, tokenizer, folder)
    dtype = token_dtype(tokenizer.vocab_size)
    if not (path.is_file() and path.stat().st_size > 0
            and path.stat().st_size % dtype.itemsize == 0):
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_writer(path) as f:
            for ids in tokenizer.encode_stream(corpus):
                f.write(np.asarray(ids).astype(dtype).tobytes())
        for tmp in path.parent.glob(".tokens-*.tmp"):  # encodes killed before this one
            tmp.unlink(missing_ok=True)
    return path, np.memmap(path, dtype=dtype, mode="r")


def _remove_others(path: Path) -> None:
    for other in path.parent.glob("tokens-*.uint*"):
        if other != path:
            other.unlink(missing_ok=True)


def token_splits(corpus: Corpus, tokenizer: Tokenizer, folder: str | Path, block_size: int,
                 train_frac: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """(train, val): contiguous memmap views of the corpus's token file. The folder's other
    token files are removed only once this corpus passes the length check (a refused run keeps
    the token file of the run already in the folder).

    Raises:
        CorpusError: a split too short for block_size (names the file, split and length needed).
    """
    path, ids = _encoded(corpus, tokenizer, folder)
    check_splits(len(ids), block_size, corpus.label, train_frac)
    _remove_others(path)
    return train_val_split(ids, train_frac)
