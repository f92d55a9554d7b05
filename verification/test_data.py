"""Data: the char tokenizer (round trip, clear errors, JSON form), the load_tokenizer dispatch, the
embedded corpus, the contiguous 90/10 split and seeded batches with one-position-shifted targets."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

from minitorch import cli
from minitorch.data import (
    DEFAULT_CORPUS,
    CharTokenizer,
    Corpus,
    CorpusError,
    DataError,
    Tokenizer,
    TokenizerError,
    build_tokenizer,
    check_splits,
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


@pytest.mark.parametrize("make, pattern", [
    (lambda d: d / "nope.txt", r"corpus file not found: .*nope.txt"),
    (lambda d: (d / "empty.txt").write_bytes(b"") or d / "empty.txt", r"empty.txt is empty"),
    (lambda d: d, r"corpus file .* is a folder, not a text file"),
])
def test_corpus_errors_name_the_file_in_one_line(tmp_path, make, pattern):
    path = make(tmp_path)
    for read in (read_corpus, Corpus.open):
        with pytest.raises(CorpusError, match=pattern) as e:
            read(path)
        assert "\n" not in str(e.value) and isinstance(e.value, DataError)


def test_corpus_invalid_utf8_names_file_and_byte_for_the_char_tokenizer(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("abc caf\u00e9".encode("latin-1"))
    corpus = Corpus.open(path)  # bytes are fine: BPE reads them
    assert corpus.nbytes == 8
    msg = r"latin1.txt is not valid UTF-8 text at byte 7 .*--tokenizer bpe"
    with pytest.raises(CorpusError, match=msg):
        build_tokenizer("char", corpus)
    with pytest.raises(CorpusError, match=msg):
        read_corpus(path)
    path.write_bytes(b"abc\xe2\x82")  # a multi-byte character cut off by the end of the file
    with pytest.raises(CorpusError, match="not valid UTF-8 text at byte 3"):
        Corpus.open(path).read_text()


def test_corpus_text_blocks_rejoin_across_multibyte_boundaries(tmp_path):
    text = "\u6771\u4eac caf\u00e9 \U0001f642 ok\n" * 50
    path = tmp_path / "u.txt"
    path.write_bytes(text.encode())
    corpus = Corpus.open(path)
    for size in (1, 2, 3, 7, 64):
        assert "".join(corpus.text_blocks(size)) == text
    tok = CharTokenizer.from_corpus(corpus)
    assert tok.chars == CharTokenizer.from_text(text).chars
    assert np.concatenate(list(tok.encode_stream(corpus))).tolist() == tok.encode(text)


def test_char_stream_encoding_names_an_unknown_character(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("abcab\u00e9")
    with pytest.raises(TokenizerError, match=r"c.txt: unknown character '\u00e9' .* position 5"):
        list(CharTokenizer("abc").encode_stream(Corpus.open(path)))


@pytest.mark.parametrize("n, block_size, split", [
    (20, 8, "val"), (5, 8, "train"), (100, 8, None), (640, 64, "val"), (641, 64, None),
])
def test_too_short_corpus_names_file_split_and_length_needed(n, block_size, split):
    if split is None:
        check_splits(n, block_size, "corpus file x.txt")
        return
    need = next(k for k in range(10**6)
                if int(0.9 * k) > block_size and k - int(0.9 * k) > block_size)
    with pytest.raises(CorpusError) as e:
        check_splits(n, block_size, "corpus file x.txt")
    msg = str(e.value)
    assert msg.startswith("corpus file x.txt is too short") and f"the {split} split" in msg
    assert f"at least {need:,} tokens" in msg and f"block_size={block_size}" in msg
    check_splits(need, block_size, "x")  # the length it asks for is enough
    with pytest.raises(CorpusError):
        check_splits(need - 1, block_size, "x")  # and no shorter one is


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


@pytest.mark.parametrize("content, pattern", [
    ("abc caf\u00e9\n".encode("latin-1") * 50, r"bad.txt is not valid UTF-8 text at byte 7"),
    (b"short text\n", r"bad.txt is too short: 11 tokens, so the train split \(the first 90%\) "
                      r"has 9; block_size=64 needs more than 64 tokens in each split, a corpus "
                      r"of at least 6\d\d tokens"),
    (b"", r"bad.txt is empty"),
])
def test_cli_train_on_a_bad_corpus_is_one_line_exit_2(tmp_path, capsys, content, pattern):
    (tmp_path / "bad.txt").write_bytes(content)
    code = cli.main(["train", "--data", str(tmp_path / "bad.txt"), "--out", str(tmp_path / "r"),
                     "--iters", "1"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("minitorch train: error: ") and err.count("\n") == 1
    assert re.search(pattern, err), err


def test_both_tokenizers_follow_the_protocol():
    for tok in (CharTokenizer("ab"), build_tokenizer("bpe", "ab ab ab", 257)):
        assert isinstance(tok, Tokenizer)
        assert load_tokenizer(json.loads(json.dumps(tok.to_dict()))).to_dict() == tok.to_dict()


def _imports(package: Path) -> set[str]:
    """Every minitorch module the package's files import (top level or inside functions)."""
    found = set()
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                parts = f"minitorch.{package.name}".split(".")[: 2 - node.level + 1]
                found.add(".".join([*parts, node.module or ""]).rstrip("."))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [node.module] if isinstance(node, ast.ImportFrom) else [
                    a.name for a in node.names]
                found.update(n for n in names if n and n.startswith("minitorch"))
    return found


def test_data_and_io_import_nothing_above_them():
    """Layers: data uses no minitorch module but itself; io uses engine, nn, data and models (a
    checkpoint loads into the GPT), never train, generate or cli (train and generate use io,
    not each other)."""
    root = Path(__file__).resolve().parent.parent / "minitorch"
    data = _imports(root / "data")
    assert data and all(m.startswith("minitorch.data") for m in data), data
    io_uses = {m.split(".")[1] for m in _imports(root / "io")}
    assert io_uses <= {"engine", "nn", "data", "models", "io"} and {"nn", "data"} <= io_uses, \
        io_uses
