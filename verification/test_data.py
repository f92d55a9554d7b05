"""Data: the char tokenizer (round trip, clear errors, JSON form), the load_tokenizer dispatch, the
embedded corpus, the contiguous 90/10 split and seeded batches with one-position-shifted targets."""

from __future__ import annotations

import json

import numpy as np
import pytest

from minitorch.data import (
    DEFAULT_CORPUS,
    CharTokenizer,
    TokenizerError,
    build_tokenizer,
    encode_corpus,
    get_batch,
    load_tokenizer,
    read_corpus,
    train_val_split,
)


def test_tokenizer_roundtrip_on_default_corpus():
    text = read_corpus()
    tok = CharTokenizer.from_text(text)
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert tok.chars == "".join(sorted(set(text)))  # ids in code-point order, no duplicates
    assert min(ids) == 0 and max(ids) == tok.vocab_size - 1


def test_tokenizer_unknown_character_names_it_and_its_position():
    tok = CharTokenizer.from_text("abc ")
    with pytest.raises(TokenizerError) as e:
        tok.encode("ab ca\u00e9c")
    msg = str(e.value)
    assert "'\u00e9'" in msg and "U+00E9" in msg and "position 5" in msg


def test_tokenizer_decode_rejects_out_of_range_ids():
    tok = CharTokenizer.from_text("xyz")
    with pytest.raises(TokenizerError, match="token id 3 at position 1"):
        tok.decode([0, 3])
    with pytest.raises(TokenizerError, match="token id -1"):
        tok.decode([-1])


def test_tokenizer_json_roundtrip_and_dispatch():
    tok = CharTokenizer.from_text(read_corpus())
    saved = json.loads(json.dumps(tok.to_dict()))
    assert saved["kind"] == "char"
    again = load_tokenizer(saved)
    sample = "The ferry, at dusk; two pennies?"
    assert again.encode(sample) == tok.encode(sample)
    assert again.vocab_size == tok.vocab_size


def test_tokenizer_bad_saved_forms_are_errors():
    with pytest.raises(TokenizerError, match="unknown tokenizer kind 'words'"):
        load_tokenizer({"kind": "words"})
    with pytest.raises(TokenizerError, match="duplicate characters"):
        CharTokenizer.from_dict({"kind": "char", "chars": "abca"})
    with pytest.raises(TokenizerError, match="not a saved char tokenizer"):
        CharTokenizer.from_dict({"kind": "char", "chars": 7})
    with pytest.raises(TokenizerError, match="unknown tokenizer kind"):
        build_tokenizer("words", "abc")


def test_bpe_plugs_into_the_same_interface():
    text = "the ferry and the bridge and the river " * 20
    tok = build_tokenizer("bpe", text, 270)
    again = load_tokenizer(json.loads(json.dumps(tok.to_dict())))
    assert type(again).__name__ == "BPETokenizer" and again.vocab_size == tok.vocab_size
    assert again.decode(again.encode(text)) == text
    assert again.encode(text) == tok.encode(text)


def test_default_corpus_is_packaged_original_size():
    assert DEFAULT_CORPUS.name == "default_corpus.txt" and DEFAULT_CORPUS.parent.name == "data"
    text = read_corpus(None)
    assert 30_000 <= len(text.encode("utf-8")) <= 100_000, len(text)
    assert text.isascii()
    tok = CharTokenizer.from_text(text)
    assert 40 <= tok.vocab_size <= 100


def test_read_corpus_errors_name_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        read_corpus(tmp_path / "nope.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty"):
        read_corpus(empty)


def test_split_is_contiguous_90_10():
    ids = encode_corpus(CharTokenizer.from_text(read_corpus()), read_corpus())
    train, val = train_val_split(ids)
    assert len(train) == int(0.9 * len(ids))
    assert np.array_equal(np.concatenate([train, val]), ids)
    assert np.shares_memory(train, ids) and np.shares_memory(val, ids)  # views, in order
    with pytest.raises(ValueError, match="train_frac"):
        train_val_split(ids, 1.0)


def _shift_violations(data: np.ndarray, x: np.ndarray, y: np.ndarray, T: int) -> list[str]:
    """Why (x, y) is not a batch of windows of `data` with targets shifted by one (empty: it is)."""
    bad = []
    if x.shape != y.shape or x.shape[1] != T:
        bad.append(f"shapes {x.shape} {y.shape}")
    for b in range(len(x)):
        starts = [s for s in range(len(data) - T) if np.array_equal(data[s:s + T], x[b])]
        if not any(np.array_equal(data[s + 1:s + T + 1], y[b]) for s in starts):
            bad.append(f"row {b}")
    return bad


def test_batches_are_windows_with_targets_shifted_by_one():
    data = np.random.default_rng(0).integers(0, 50, size=300)
    x, y = get_batch(data, 8, 16, np.random.default_rng(1))
    assert x.dtype == np.int64 and x.shape == (8, 16)
    assert _shift_violations(data, x, y, 16) == []
    assert np.array_equal(x[:, 1:], y[:, :-1])
    # negative control: the checker rejects unshifted targets and targets shifted by two
    idx = np.array([0, 5, 100])[:, None] + np.arange(16)  # (3, T) hand-made windows
    assert _shift_violations(data, data[idx], data[idx + 1], 16) == []
    assert _shift_violations(data, data[idx], data[idx], 16)
    assert _shift_violations(data, data[idx], data[idx + 2], 16)


def test_batches_are_seeded_and_reach_both_ends():
    data = np.arange(40)
    a = get_batch(data, 4, 8, np.random.default_rng(7))
    b = get_batch(data, 4, 8, np.random.default_rng(7))
    c = get_batch(data, 4, 8, np.random.default_rng(8))
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert not np.array_equal(a[0], c[0])
    rng = np.random.default_rng(0)
    starts = {int(get_batch(data, 1, 8, rng)[0][0, 0]) for _ in range(2000)}
    assert starts == set(range(40 - 8))  # every window, including the one ending at the last token


def test_get_batch_needs_more_tokens_than_block_size():
    with pytest.raises(ValueError, match="needs more than block_size=8"):
        get_batch(np.arange(8), 2, 8, np.random.default_rng(0))
