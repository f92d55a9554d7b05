"""Text data: the Tokenizer protocol and errors (base.py), char and byte-level BPE tokenizers,
corpus files read in blocks (corpus.py), the contiguous train/val split and seeded (B, T)
batches. Pure NumPy + stdlib; writing token files is io's job.
"""

from .base import CorpusError, DataError, Tokenizer, TokenizerError
from .batches import check_splits, encode_corpus, get_batch, train_val_split
from .bpe import BPETokenizer
from .char import CharTokenizer
from .corpus import DEFAULT_CORPUS, Corpus, read_corpus
from .tokenizer import build_tokenizer, load_tokenizer

__all__ = ["BPETokenizer", "CharTokenizer", "Corpus", "CorpusError", "DEFAULT_CORPUS",
           "DataError", "Tokenizer", "TokenizerError", "build_tokenizer", "check_splits",
           "encode_corpus", "get_batch", "load_tokenizer", "read_corpus", "train_val_split"]
