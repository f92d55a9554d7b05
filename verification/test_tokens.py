"""Token files: a corpus encoded once into a memmapped uint16/uint32 file beside the run, keyed by
the corpus's and the tokenizer's hashes, written atomically, reused on the next start; batches
read from it equal in-memory ones. Slow: a 200 MB corpus trains within 500 MB peak RSS, and runs
killed with -9 while encoding or training end bit-identical to an uninterrupted one."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from minitorch.data import CharTokenizer, Corpus, CorpusError, build_tokenizer, get_batch
from minitorch.io import load_checkpoint, token_file, token_splits
from minitorch.io.tokens import token_dtype, token_path
from minitorch.train import Trainer, resolve

ROOT = Path(__file__).resolve().parent.parent
TEXT = "the ferry crossed at dusk; two pennies for the boatman.\n" * 200


def _corpus(tmp_path: Path, text: str = TEXT, name: str = "c.txt") -> Corpus:
    (tmp_path / name).write_text(text)
    return Corpus.open(tmp_path / name)


def _token_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("tokens-*"))


def test_token_file_holds_the_encoding_and_is_reused(tmp_path):
    corpus = _corpus(tmp_path)
    tok = build_tokenizer("char", corpus)
    ids = token_file(corpus, tok, tmp_path / "run")
    assert isinstance(ids, np.memmap) and ids.dtype == np.uint16 and not ids.flags.writeable
    assert ids.tolist() == tok.encode(TEXT)
    path = token_path(corpus, tok, tmp_path / "run")
    assert _token_files(tmp_path / "run") == [path.name]
    stat = path.stat()

    def no_encoding(_corpus):
        raise AssertionError("encoded again")

    tok.encode_stream = no_encoding  # a second start must read the file, not re-encode
    again = token_file(corpus, tok, tmp_path / "run")
    assert np.array_equal(again, ids)
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)


def test_token_file_is_keyed_by_corpus_and_tokenizer(tmp_path):
    run = tmp_path / "run"
    corpus = _corpus(tmp_path)
    char = build_tokenizer("char", corpus)
    first = token_path(corpus, char, run)
    token_file(corpus, char, run)
    bpe = build_tokenizer("bpe", corpus, 270)
    token_file(corpus, bpe, run)  # another tokenizer: another file, the stale one removed
    assert _token_files(run) == [token_path(corpus, bpe, run).name] != [first.name]
    changed = _corpus(tmp_path, TEXT.replace("ferry", "terry"))
    ids = token_file(changed, char, run)
    assert token_path(changed, char, run) != first  # same tokenizer, other corpus: other key
    assert char.decode(ids) == TEXT.replace("ferry", "terry")


def test_token_dtype_fits_the_vocabulary(tmp_path):
    assert token_dtype(2**16) == np.uint16 and token_dtype(2**16 + 1) == np.uint32
    chars = "".join(chr(c) for c in range(0x10000, 0x10000 + 2**16 + 5))  # > 65536 ids
    text = chars[-3:] + chars[:2] + chars[70000 - 0x10000 - 1]
    corpus = _corpus(tmp_path, text)
    ids = token_file(corpus, CharTokenizer(chars), tmp_path / "run")
    assert ids.dtype == np.uint32 and ids.tolist() == CharTokenizer(chars).encode(text)
    assert max(ids) > 2**16  # would wrap in uint16


def test_interrupted_encoding_leaves_no_token_file(tmp_path):
    corpus = _corpus(tmp_path)
    tok = build_tokenizer("char", corpus)

    def dies_midway(c):
        yield np.zeros(10, np.int32)
        raise KeyboardInterrupt

    tok.encode_stream = dies_midway
    with pytest.raises(KeyboardInterrupt):
        token_file(corpus, tok, tmp_path / "run")
    assert list((tmp_path / "run").iterdir()) == []  # no token file, no temp file
    # kill -9 mid-encode leaves a temp file (no cleanup runs); the next encode removes it
    killed = tmp_path / "run" / f".{token_path(corpus, tok, tmp_path / 'run').name}.x1y2.tmp"
    killed.write_bytes(b"\0" * 10)
    del tok.encode_stream  # the class's real method again
    ids = token_file(corpus, tok, tmp_path / "run")
    assert _token_files(tmp_path / "run") == [Path(ids.filename).name] and not killed.exists()


def test_token_splits_refuse_a_short_corpus_naming_it(tmp_path):
    corpus = _corpus(tmp_path, "abcdefghij" * 5, name="short.txt")
    with pytest.raises(CorpusError, match=r"short.txt is too short: 50 tokens, so the val split "
                                          r"\(the last 10%\) has 5; block_size=16 .* at least"):
        token_splits(corpus, build_tokenizer("char", corpus), tmp_path / "run", 16)


def test_trainer_batches_come_from_the_token_file(tmp_path):
    cfg = resolve(None, {"out_dir": str(tmp_path / "run"), "iters": 1, "plot": False,
                         "model": {"n_layer": 1, "n_embd": 16, "n_hidden": 32, "block_size": 16}})
    t = Trainer(cfg, stream=io.StringIO())
    assert isinstance(t.train_data, np.memmap) and isinstance(t.val_data, np.memmap)
    assert Path(t.train_data.filename).parent == tmp_path / "run"
    in_memory = np.asarray(t.train_data, dtype=np.int64)
    for a, b in zip(get_batch(t.train_data, 8, 16, np.random.default_rng(3)),
                    get_batch(in_memory, 8, 16, np.random.default_rng(3))):
        assert a.dtype == b.dtype == np.int64 and np.array_equal(a, b)


BIG_CHILD = textwrap.dedent("""
    import json, sys, time
    from minitorch.train import Trainer, resolve

    t0 = time.perf_counter()
    cfg = resolve(None, {"data": sys.argv[1], "out_dir": sys.argv[2], "iters": 3, "eval_iters": 2,
                         "eval_interval": 2, "batch_size": 8, "plot": False, "sample_tokens": 8,
                         "model": {"n_layer": 1, "n_embd": 32, "n_hidden": 64, "block_size": 32}})
    t = Trainer(cfg)
    prepared = time.perf_counter() - t0
    t.train()
    peak = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
    print(json.dumps({"peak_rss_mb": peak / 1024, "prepare_s": prepared,
                      "total_s": time.perf_counter() - t0, "tokens": len(t.train_data)
                      + len(t.val_data), "vocab": t.tokenizer.vocab_size}))
""")


def _write_corpus(path: Path, nbytes: int, seed: int = 0) -> None:
    """At least nbytes of word-salad UTF-8 text with some non-ASCII: 16 distinct ~1 MB blocks
    written in a seeded random order (quick to make; the tokenizer still reads every byte)."""
    rng = np.random.default_rng(seed)
    words = np.array("the of and to a in that is was he for it with as his on be at by had "
                     "not are but from or have an they which one you were her all she there "
                     "would their we him been has when who will no more if out so said what "
                     "café naïve über São déjà".split())
    blocks = [(" ".join(rng.choice(words, 200_000)) + ".\n").encode() for _ in range(16)]
    with open(path, "wb") as f:
        written = 0
        while written < nbytes:
            block = blocks[rng.integers(len(blocks))]  # ~1.1 MB
            f.write(block)
            written += len(block)


@pytest.mark.slow
def test_200mb_corpus_trains_within_500mb_peak_rss(tmp_path, record):
    corpus = tmp_path / "big.txt"
    _write_corpus(corpus, 200 * 10**6)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", BIG_CHILD, str(corpus), str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    print("200 MB corpus:", got)
    record("streaming_corpus_peak_rss_mb", "train", "200 MB char corpus", got["peak_rss_mb"],
           tol=500.0, passed=got["peak_rss_mb"] <= 500, **got)
    assert got["tokens"] > 190 * 10**6 and got["vocab"] < 100
    assert got["peak_rss_mb"] <= 500


RUN = ["--iters", "24", "--ckpt_interval", "4", "--n_layer", "1", "--n_embd", "16",
       "--n_hidden", "32", "--block_size", "16", "--batch_size", "4", "--eval_interval", "12",
       "--eval_iters", "1", "--sample_tokens", "4", "--plot", "False"]


def _train(out: Path, *extra: str, data: Path | None = None,
           plant: str | None = None) -> subprocess.Popen:
    args = [*RUN, *(["--data", str(data)] if data else []), "--out", str(out), *extra]
    main = ["verification.mpi_driver", "--plant", plant] if plant else ["minitorch"]
    return subprocess.Popen([sys.executable, "-m", *main, "train", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def _kill_when(proc: subprocess.Popen, ready) -> bool:
    """SIGKILL `proc` as soon as ready() holds; False if it finished first."""
    while proc.poll() is None:
        if ready():
            proc.kill()
            proc.wait()
            return True
    return False


def _final_state(out: Path) -> dict[str, np.ndarray]:
    ck = load_checkpoint(out)
    state = {f"model/{k}": v for k, v in ck.model.items()}
    for i, st in ck.optimizer["state"].items():
        state.update({f"optim/{i}/{k}": np.asarray(v) for k, v in st.items()})
    return {"step": np.asarray(ck.step), **state}


@pytest.mark.slow
def test_kill_9_while_encoding_or_training_then_resume_is_bit_identical(tmp_path, record):
    """One run uninterrupted; one killed -9 while its token file is being written (started
    again: it encodes afresh, the dead temp file swept); one killed after its second checkpoint
    and resumed. All three end with identical weights and optimizer state."""
    data = tmp_path / "corpus.txt"
    _write_corpus(data, 12 * 10**6)
    ref, enc, mid = tmp_path / "ref", tmp_path / "enc", tmp_path / "mid"
    assert _train(ref, data=data).wait() == 0
    proc = _train(enc, data=data)
    killed_encoding = _kill_when(proc, lambda: any(enc.glob(".tokens-*.tmp")))
    assert _train(enc, data=data).wait() == 0
    assert not list(enc.glob(".tokens-*.tmp")) and len(list(enc.glob("tokens-*"))) == 1
    proc = _train(mid, data=data, plant="hold_at_step_8")  # waits there: the kill is no race

    def second_checkpoint() -> bool:
        try:
            return json.loads((mid / "checkpoint.json").read_text())["step"] == 8
        except (OSError, ValueError):
            return False

    killed_training = _kill_when(proc, second_checkpoint)
    resumed = _train(mid, "--resume", data=data)
    assert resumed.wait() == 0, resumed.stderr.read()
    want = _final_state(ref)
    for out in (enc, mid):
        got = _final_state(out)
        assert got.keys() == want.keys() and int(got["step"]) == 24
        assert all(np.array_equal(got[k], want[k]) for k in want), out.name
    record("kill9_resume", "train", "12 MB corpus", 0.0, tol=0.0, passed=True,
           killed_encoding=killed_encoding, killed_training=killed_training)
    assert killed_encoding and killed_training  # both kills landed where intended
