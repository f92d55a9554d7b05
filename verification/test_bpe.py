"""Byte-level BPE: merges equal a naive re-counting trainer, deterministic ties, byte/Unicode
round-trips (hypothesis), serialization, Tiny Shakespeare timing, and the contiguous train/val
split of the trainer's BPE token stream."""

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
from minitorch.data.batches import read_corpus
from minitorch.data.bpe import (
    BPETokenizer,
    _merge,
    split_chunks,
    train_merges,
)
from minitorch.data.tokenizer import TokenizerError, build_tokenizer, load_tokenizer
from minitorch.train import Trainer, resolve

ROOT = Path(__file__).resolve().parent.parent
SHAKESPEARE = Path(os.environ.get("MINITORCH_TINYSHAKESPEARE",
                                  "/work/shared/data/tinyshakespeare/input.txt"))
needs_shakespeare = pytest.mark.skipif(
    not SHAKESPEARE.is_file(),
    reason=f"Tiny Shakespeare not found at {SHAKESPEARE} (set $MINITORCH_TINYSHAKESPEARE)")

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
                             capture_output=True, check=True, cwd=ROOT)
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
