"""Byte-level BPE: merges equal a naive re-counting trainer, deterministic ties, byte/Unicode
round-trips (hypothesis), block-by-block training and encoding equal to whole reads, non-UTF-8
corpus files, serialization, Tiny Shakespeare timing ($MINITORCH_TINYSHAKESPEARE), and the
contiguous train/val split of the trainer's BPE token stream."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from artifacts import write_json
from minitorch.data import Corpus, TokenizerError, build_tokenizer, load_tokenizer, read_corpus
from minitorch.data.bpe import (
    BPETokenizer,
    _merge,
    cut_blocks,
    split_chunks,
    train_merges,
)
from minitorch.train import Trainer, resolve

ROOT = Path(__file__).resolve().parent.parent
SHAKESPEARE = Path(os.environ.get("MINITORCH_TINYSHAKESPEARE", ""))
needs_shakespeare = pytest.mark.skipif(
    not (os.environ.get("MINITORCH_TINYSHAKESPEARE") and SHAKESPEARE.is_file()),
    reason="needs Tiny Shakespeare: set $MINITORCH_TINYSHAKESPEARE to the char-rnn input.txt "
           f"(now {os.environ.get('MINITORCH_TINYSHAKESPEARE')!r})")

SMALL_CORPUS = (
    "First Citizen: Before we proceed any further, hear me speak.\n"
    "All: Speak, speak. Ça va? naïve café — 東京 and 東京 again; emoji 🙂🙂 x2, 12345 67890.\n"
) * 3 + "the then these there their theme thermal 1,000 1,024 'tis we'll you've\n" * 4


def naive_merges(data: bytes, n_merges: int, min_frequency: int = 2,
                 largest_on_tie: bool = False) -> list[tuple[int, int]]:
    """Reference trainer: recount every pair over the chunk table before each merge."""
    freq = Counter(split_chunks(data))
    words = {c: list(c) for c in freq}
    merges = []
    for i in range(n_merges):
        counts: Counter = Counter()
        for c, w in words.items():
            for pair in zip(w, w[1:], strict=False):
                counts[pair] += freq[c]
        if not counts:
            break
        top = max(counts.values())
        ties = sorted(p for p, n in counts.items() if n == top)
        if top < min_frequency:
            break
        pair = ties[-1] if largest_on_tie else ties[0]
        merges.append(pair)
        words = {c: _merge(w, *pair, 256 + i) for c, w in words.items()}
    return merges


@pytest.fixture(scope="module")
def small_tok() -> BPETokenizer:
    return BPETokenizer.train(SMALL_CORPUS, 256 + 60, min_frequency=2)


def test_bpe_merges_equal_naive_trainer():
    data = SMALL_CORPUS.encode()
    got = train_merges(data, 80)
    assert got == naive_merges(data, 80)
    # Negative control: the corpus has ties, so a different tie-break gives different merges.
    assert got != naive_merges(data, 80, largest_on_tie=True)


@pytest.mark.slow
@needs_shakespeare
def test_bpe_merges_equal_naive_trainer_on_shakespeare_slice():
    data = SHAKESPEARE.read_bytes()[:60_000]
    assert train_merges(data, 40) == naive_merges(data, 40)


def test_bpe_tie_break_takes_smallest_pair():
    # Every pair occurs once: the first merges follow (a, b) order.
    merges = train_merges(b"zy ab", 3, min_frequency=1)
    assert merges == [(ord(" "), ord("a")), (ord("z"), ord("y")), (256, ord("b"))]


def test_bpe_stops_when_no_pair_is_frequent_enough():
    tok = BPETokenizer.train(b"abab", 1000)
    assert tok.merges == [(ord("a"), ord("b"))] and tok.vocab_size == 257
    assert tok.encode(b"abab") == [256, 256]


_TRAIN_SNIPPET = (
    "import json, sys; from minitorch.data.bpe import train_merges; "
    "print(json.dumps(train_merges(sys.stdin.buffer.read(), 120)))"
)


def test_bpe_same_corpus_same_merges_across_processes():
    """Determinism under different hash seeds (dict/set orders of bytes keys change with it)."""
    data = (SMALL_CORPUS * 2).encode()
    runs = []
    for seed in ("1", "2", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", _TRAIN_SNIPPET], input=data, env=env,
                             capture_output=True, check=True)
        runs.append(json.loads(out.stdout))
    assert len(runs[0]) > 50
    assert runs[0] == runs[1] == runs[2] == [list(m) for m in train_merges(data, 120)]


@settings(deadline=None, max_examples=200)
@given(st.binary(max_size=300))
def test_bpe_split_chunks_rejoin(data):
    assert b"".join(split_chunks(data)) == data


@settings(deadline=None, max_examples=300)
@given(st.binary(max_size=300))
def test_bpe_roundtrip_arbitrary_bytes(small_tok, data):
    ids = small_tok.encode_bytes(data)
    assert all(0 <= i < small_tok.vocab_size for i in ids)
    assert small_tok.decode_bytes(ids) == data


@pytest.mark.slow
@settings(deadline=None, max_examples=300)
@given(st.text(max_size=200))
def test_bpe_roundtrip_unicode(small_tok, text):
    assert small_tok.decode(small_tok.encode(text)) == text


@settings(deadline=None, max_examples=200)
@given(st.text(alphabet=st.sampled_from(list("the thème 東京 ,.'\n12")), max_size=120))
def test_bpe_encode_equals_merges_applied_in_order(small_tok, text):
    """Greedy lowest-rank encoding == applying every merge, in training order, to each chunk."""
    want = []
    for chunk in split_chunks(text.encode()):
        w = list(chunk)
        for i, (a, b) in enumerate(small_tok.merges):
            w = _merge(w, a, b, 256 + i)
        want.extend(w)
    assert small_tok.encode(text) == want


def test_bpe_compresses_its_corpus(small_tok):
    ids = small_tok.encode(SMALL_CORPUS)
    assert len(ids) < 0.6 * len(SMALL_CORPUS.encode())
    assert max(ids) >= 256


def test_bpe_dict_roundtrip(small_tok):
    d = json.loads(json.dumps(small_tok.to_dict()))
    assert d["kind"] == "bpe"
    back = load_tokenizer(d)  # the data package's factory, as checkpoints load it
    assert isinstance(back, BPETokenizer)
    assert back.merges == small_tok.merges and back.vocab_size == small_tok.vocab_size
    assert back.encode(SMALL_CORPUS) == small_tok.encode(SMALL_CORPUS)


@pytest.mark.parametrize("d, match", [
    ({"kind": "char", "merges": []}, "not a saved BPE tokenizer \\(kind='char'"),
    ({"kind": "bpe"}, "merges of type NoneType"),
    ({"kind": "bpe", "merges": [[1, 2, 3]]}, "pairs of ids"),
    ({"kind": "bpe", "merges": [[300, 1]]}, "merge 0 = \\(300, 1\\)"),
    ({"kind": "bpe", "merges": [], "split": "nope"}, "unknown BPE split pattern"),
])
def test_bpe_from_dict_rejects_bad_input(d, match):
    with pytest.raises(TokenizerError, match=match):
        BPETokenizer.from_dict(d)


def test_bpe_rejects_bad_arguments(small_tok):
    with pytest.raises(TokenizerError, match="vocab_size >= 256, got 100"):
        BPETokenizer.train("abc", 100)
    with pytest.raises(TokenizerError, match="vocab_size >= 256, got None"):
        build_tokenizer("bpe", "abc", None)
    with pytest.raises(TokenizerError, match="out of range"):
        small_tok.decode([1, small_tok.vocab_size])
    with pytest.raises(TokenizerError, match="out of range"):
        small_tok.decode([-1])
    with pytest.raises(TokenizerError, match="str or bytes"):
        small_tok.encode(123)


@pytest.mark.slow
@needs_shakespeare
def test_bpe_tiny_shakespeare_512(record):
    data = SHAKESPEARE.read_bytes()
    start = time.perf_counter()
    tok = BPETokenizer.train(data, 512)
    train_s = time.perf_counter() - start
    start = time.perf_counter()
    ids = tok.encode_bytes(data)
    encode_s = time.perf_counter() - start
    ratio = len(data) / len(ids)
    ok = tok.vocab_size == 512 and tok.decode_bytes(ids) == data and ratio > 1.5
    record("bpe_train", "tinyshakespeare", "vocab=512", None, passed=ok,
           seconds=train_s, encode_seconds=encode_s, bytes=len(data), tokens=len(ids),
           bytes_per_token=ratio)
    write_json("bpe.json", {"corpus": str(SHAKESPEARE), "bytes": len(data), "vocab_size": 512,
                            "train_seconds": train_s, "encode_seconds": encode_s,
                            "tokens": len(ids), "bytes_per_token": ratio,
                            "first_merges": [tok.vocab[i].decode("latin-1")
                                             for i in range(256, 276)]})
    assert tok.vocab_size == 512
    assert tok.decode_bytes(ids) == data
    assert ratio > 1.5  # 256 merges of English text roughly halve the length


def test_trainer_bpe_stream_is_split_contiguously(tmp_path):
    """The trainer's BPE path (`train --tokenizer bpe`) encodes the whole corpus as one token
    stream and splits it contiguously: train is its head, val its tail, nothing reordered."""
    cfg = resolve(None, {"tokenizer": "bpe", "vocab_size": 280, "out_dir": str(tmp_path),
                         "model": {"n_layer": 1, "n_embd": 16, "n_hidden": 32, "block_size": 16},
                         "plot": False})
    t = Trainer(cfg, stream=io.StringIO())
    text = read_corpus(None)
    stream = np.asarray(t.tokenizer.encode(text))
    assert t.tokenizer.kind == "bpe" and len(stream) < len(text.encode())  # merges applied
    np.testing.assert_array_equal(np.concatenate([t.train_data, t.val_data]), stream)
    assert len(t.train_data) == int(0.9 * len(stream))
    assert text.encode().endswith(t.tokenizer.decode_bytes(t.val_data))


def _pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)] or [b""]


_WORDS = st.sampled_from([b" the", b"'s", b"  ", b"12", b"\n", b"ab", b"\xe9t\xe9"])
_BYTES_WITH_TEXT = st.lists(st.one_of(st.binary(max_size=12), _WORDS), max_size=60).map(b"".join)


@settings(deadline=None, max_examples=200)
@given(_BYTES_WITH_TEXT, st.integers(1, 40))
def test_bpe_cut_blocks_chunk_like_a_whole_read(data, size):
    pieces = list(cut_blocks(_pieces(data, size)))
    assert b"".join(pieces) == data
    assert [c for p in pieces for c in split_chunks(p)] == split_chunks(data)


@settings(deadline=None, max_examples=60)
@given(_BYTES_WITH_TEXT, st.integers(1, 40))
def test_bpe_training_in_blocks_equals_whole_read(data, size):
    assert train_merges(cut_blocks(_pieces(data, size)), 30, 1) == train_merges(data, 30, 1)


def test_bpe_trains_and_roundtrips_a_non_utf8_corpus_file(tmp_path):
    """Latin-1 text plus random bytes (invalid UTF-8): trained on and encoded from the file in
    blocks, the ids decode to exactly the file's bytes."""
    rng = np.random.default_rng(0)
    data = ("caf\u00e9 na\u00efve d\u00e9j\u00e0 vu " * 300).encode("latin-1")
    data += rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    path = tmp_path / "latin1.txt"
    path.write_bytes(data)
    corpus = Corpus.open(path)
    tok = build_tokenizer("bpe", corpus, 300)
    assert tok.vocab_size == 300 and tok.merges == BPETokenizer.train(data, 300).merges
    ids = np.concatenate(list(tok.encode_stream(corpus)))
    assert ids.tolist() == tok.encode_bytes(data)
    assert tok.decode_bytes(ids) == data


def test_trainer_trains_bpe_on_a_non_utf8_file(tmp_path):
    data = ("ol\u00e9 se\u00f1or, \u00bfqu\u00e9 tal? " * 400).encode("latin-1")
    (tmp_path / "c.txt").write_bytes(data)
    cfg = resolve(None, {"tokenizer": "bpe", "vocab_size": 270, "data": str(tmp_path / "c.txt"),
                         "out_dir": str(tmp_path / "run"), "iters": 2, "eval_iters": 1,
                         "model": {"n_layer": 1, "n_embd": 16, "n_hidden": 32, "block_size": 16},
                         "plot": False, "sample_tokens": 4})
    t = Trainer(cfg, stream=io.StringIO())
    stream = np.concatenate([t.train_data, t.val_data])
    assert t.tokenizer.decode_bytes(stream) == data
