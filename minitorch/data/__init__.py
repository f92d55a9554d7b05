"""Text data: tokenizers (char, and byte-level BPE from bpe.py), the embedded default corpus,
the contiguous train/val split and seeded (B, T) batches. Pure NumPy + stdlib."""

from .batches import DEFAULT_CORPUS, encode_corpus, get_batch, read_corpus, train_val_split
from .tokenizer import CharTokenizer, TokenizerError, build_tokenizer, load_tokenizer

__all__ = ["DEFAULT_CORPUS", "CharTokenizer", "TokenizerError", "build_tokenizer",
           "encode_corpus", "get_batch", "load_tokenizer", "read_corpus", "train_val_split"]
