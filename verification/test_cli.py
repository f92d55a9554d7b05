"""The command line: `python -m minitorch train` end to end on the embedded corpus, `sample` from
its checkpoint, `--resume`, one-line errors (exit status 2) that name the bad input, and the
subcommand registry another command plugs into."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from minitorch import cli
from minitorch.train import read_metrics

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--iters", "4", "--eval_interval", "2", "--eval_iters", "1", "--batch_size", "2",
        "--n_layer", "1", "--n_embd", "16", "--n_hidden", "32", "--block_size", "16",
        "--sample_tokens", "8", "--plot", "False"]


def test_cli_train_then_sample_end_to_end(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "minitorch", "train", *TINY, "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # the last evaluation (step 3's, before its update) is labelled with its own step
    last = [r for r in read_metrics(out) if r["kind"] == "eval"][-1]
    assert last["step"] == 3
    assert proc.stdout.splitlines()[-1].startswith(
        f"done: step 4 | eval at step 3: train {last['train']:.4f} | val {last['val']:.4f} | ")
    assert "step     0/4 | train" in proc.stderr
    for name in ("checkpoint.json", "metrics.jsonl", "samples.json", "config.json"):
        assert (out / name).is_file(), name
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["train"]["data"] is None  # the embedded corpus
    assert cfg["model"]["n_layer"] == 1 and cfg["model"]["n_embd"] == 16
    args = ["sample", "--checkpoint", str(out), "--prompt", "The ferry", "--tokens", "12",
            "--seed", "3", "--top_k", "5"]
    first = subprocess.run([sys.executable, "-m", "minitorch", *args], capture_output=True,
                           text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("The ferry") and len(first.stdout) == len("The ferry") + 13
    assert cli.main(args) == 0  # in-process: the same seed gives the same text


def test_cli_resume_continues_the_run(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert cli.main(["train", *TINY, "--out", out]) == 0
    assert cli.main(["train", "--resume", "--out", out, "--iters", "6"]) == 0
    assert "resuming" in capsys.readouterr().err
    assert [r["step"] for r in read_metrics(out) if r["kind"] == "step"] == list(range(6))


def test_cli_recipe_and_model_override(tmp_path, monkeypatch):
    seen = {}

    def fake_train(self, until=None):  # capture the resolved config without training
        seen["cfg"], seen["params"] = self.cfg, self.model.num_parameters()
        return {"step": 0, "eval": {}, "elapsed": 0.0, "params": 0, "out_dir": ""}

    monkeypatch.setattr("minitorch.train.loop.Trainer.train", fake_train)
    assert cli.main(["train", "--recipe", "better", "--model.n_layer=2", "--iters", "7",
                     "--out", str(tmp_path)]) == 0
    cfg = seen["cfg"]
    assert (cfg.optimizer, cfg.lr, cfg.iters, cfg.model) == (
        "adamw", 2e-3, 7, {"n_head": 4, "activation": "gelu", "n_layer": 2})


@pytest.mark.parametrize("argv, pattern", [
    (["train", "--nlayer", "2"], "unknown config key 'nlayer'"),
    (["train", "--iters", "many"], "config key 'iters': cannot parse 'many'"),
    (["train", "--recipe", "fastest"], "recipe 'fastest' not found"),
    (["train", "--data", "/no/such/corpus.txt"], "corpus file not found: /no/such/corpus.txt"),
    (["train", "--resume", "--out", "{tmp}/empty"], "no checkpoint at"),
    (["sample", "--checkpoint", "{tmp}/empty"], "no checkpoint at"),
])
def test_cli_errors_are_one_clear_line(tmp_path, capsys, argv, pattern):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"minitorch {argv[0]}: error: ") and pattern in err
    assert "Traceback" not in err


def test_cli_sample_unknown_character_is_named(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert cli.main(["train", *TINY, "--out", out]) == 0
    capsys.readouterr()
    assert cli.main(["sample", "--checkpoint", out, "--prompt", "caf\u00e9"]) == 2
    err = capsys.readouterr().err
    assert "unknown character '\u00e9'" in err and "position 3" in err


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("cli") / "run")
    assert cli.main(["train", *TINY, "--out", out]) == 0
    return out


@pytest.mark.parametrize("flags, pattern", [
    (["--top_k", "0"], "top_k must be None or an int >= 1, got 0"),
    (["--top-k", "-2"], "top_k must be None or an int >= 1, got -2"),
    (["--temperature", "-1"], "temperature must be a finite number >= 0, got -1.0"),
    (["--temperature", "nan"], "temperature must be a finite number >= 0, got nan"),
    (["--temperature", "inf", "--no-cache"], "temperature must be a finite number >= 0, got inf"),
])
def test_cli_sample_rejects_bad_sampling_flags(tiny_run, capsys, flags, pattern):
    capsys.readouterr()
    assert cli.main(["sample", "--checkpoint", tiny_run, "--tokens", "3", *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("minitorch sample: error: ") and pattern in err
    assert err.count("\n") == 1 and "Traceback" not in err
    # the same flags with good values sample normally (the checkpoint is fine)
    assert cli.main(["sample", "--checkpoint", tiny_run, "--tokens", "3", "--top_k", "2",
                     "--temperature", "0.5"]) == 0


def test_cli_help_lists_config_keys(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for key in ("--recipe", "--resume", "--overwrite", "--lr", "--weight_decay", "--n_layer",
                "--dtype", "--vocab-size", "peak learning rate", "--on_nonfinite",
                "--keep_last"):
        assert key in text, key


def test_cli_help_shows_every_default(capsys):
    """Every flag's help ends with its default: TrainConfig's from the dataclass, the model's
    from the seed preset, sample's and trace's from argparse (an option whose default is None,
    no value, shows none: '(default: None)' would read as a value; --top_k says 'all')."""
    import dataclasses

    from minitorch.models.gpt import PRESETS, GPTConfig
    from minitorch.train import TrainConfig

    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for f in dataclasses.fields(TrainConfig):
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        if f.name != "model":
            assert _help_of(text, f.name).endswith(f"(default: {default!r})"), f.name
    for f in dataclasses.fields(GPTConfig):
        if f.name != "vocab_size":
            shown = f"seed: {getattr(PRESETS['seed'], f.name)!r})"
            assert _help_of(text, f.name).endswith(shown), f.name
    for command, flags in (("sample", ["--tokens", "--temperature", "--seed", "--prompt",
                                       "--top-k"]), ("trace", ["--rows"])):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        listing = text.split("options:")[1]
        for flag in flags:
            assert "(default: " in listing.split(flag)[1].split(" --")[0], (command, flag)
        assert "(default: None)" not in text, command


def _help_of(text: str, name: str) -> str:
    """The help text printed after `--name VALUE` (and its --name-with-hyphens alias)."""
    import re

    rest = text.split(f"--{name} VALUE")[-1]
    rest = re.sub(r"^, --[\w-]+ VALUE", "", rest).strip()
    nxt = re.search(r" --[\w.-]+ VALUE(?!\])| model config \(", rest)
    return rest[: nxt.start()].strip() if nxt else rest


@pytest.mark.parametrize("cache", [True, False])
def test_cli_sample_streams_tokens_as_they_are_drawn(tiny_run, capsys, monkeypatch, cache):
    """The 6th draw is interrupted: the prompt and the 5 tokens drawn before it are already on
    stdout (nothing waits for the end), and the run ends as an interrupt (status 130)."""
    import minitorch.generate.cached as cached
    import minitorch.generate.sample as sample

    real, calls = sample.sample_next, []

    def draw(*args, **kwargs):
        calls.append(1)
        if len(calls) == 6:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(cached if cache else sample, "sample_next", draw)
    capsys.readouterr()
    argv = ["sample", "--checkpoint", tiny_run, "--prompt", "The ", "--tokens", "1000000000",
            "--seed", "3"] + ([] if cache else ["--no-cache"])
    assert cli.main(argv) == 130
    out, err = capsys.readouterr()
    assert out.startswith("The ") and len(out) == len("The ") + 5
    assert err.strip() == "minitorch sample: interrupted"
    monkeypatch.undo()  # the same seed, uninterrupted, begins with the same 5 characters
    assert cli.main(argv[:-2 if cache else -3] + ["--tokens", "5", "--seed", "3"]
                    + ([] if cache else ["--no-cache"])) == 0
    assert capsys.readouterr().out == out + "\n"


def test_cli_sample_stream_decodes_bytes_split_across_tokens(capsys):
    """Byte-level tokens that split a UTF-8 character print it once it is complete."""
    import io as _io

    class Bytes:
        def decode_bytes(self, ids):
            return bytes(ids)

    out = _io.StringIO()
    printer = cli._TokenPrinter(Bytes(), out)
    for b in "é!".encode():
        printer(np.array([b]))
    printer.close()
    assert out.getvalue() == "é!\n"


def test_cli_commands_are_pluggable(monkeypatch, capsys):
    monkeypatch.setattr(cli, "COMMANDS", dict(cli.COMMANDS))

    @cli.command("hello", "say hello")
    def _setup(p):
        p.add_argument("--name", default="world")
        return lambda args, extra: print(f"hello {args.name}") or 0

    assert cli.main(["hello", "--name", "river"]) == 0
    assert capsys.readouterr().out == "hello river\n"
    assert set(cli.COMMANDS) >= {"train", "sample", "hello"}


def test_cli_bpe_tokenizer_trains_resumes_and_samples(tmp_path, capsys):
    out = str(tmp_path / "bpe")
    assert cli.main(["train", *TINY, "--tokenizer", "bpe", "--vocab-size", "280", "--out",
                     out]) == 0
    saved = json.loads((Path(out) / "checkpoint.json").read_text())
    assert saved["tokenizer"]["kind"] == "bpe" and saved["model_config"]["vocab_size"] == 280
    assert cli.main(["train", "--resume", "--out", out, "--iters", "5"]) == 0
    capsys.readouterr()
    assert cli.main(["sample", "--checkpoint", out, "--prompt", "The mill", "--tokens", "3"]) == 0
    assert capsys.readouterr().out.startswith("The mill")


@pytest.mark.parametrize("code, advice", [
    ("ENOSPC", "the disk is full: free space (or choose another --out)"),
    ("EACCES", "permission denied: make it writable (or choose another --out)"),
    ("EROFS", "the filesystem is read-only: choose another --out"),
    ("ENOENT", "its folder vanished while the command ran (removed or unmounted?)")])
def test_machine_errors_while_writing_are_one_line(tmp_path, capsys, monkeypatch, code, advice):
    """The write seam fails (as a full disk, a read-only mount, a removed folder do) at the
    third checkpoint: one line naming the file, what to do and the checkpoint left intact;
    no traceback (issue 34: a traceback)."""
    import errno
    import os

    from minitorch.io import atomic, load_checkpoint

    out = tmp_path / "run"
    real, writes = atomic.write_and_sync, []

    def write_and_sync(f, data):
        writes.append(os.readlink(f"/proc/self/fd/{f.fileno()}"))  # the temp file's path
        if len([w for w in writes if w.startswith(f"{out}/.ckpt-")]) == 3:
            raise OSError(getattr(errno, code), os.strerror(getattr(errno, code)))
        return real(f, data)

    monkeypatch.setattr(atomic, "write_and_sync", write_and_sync)
    capsys.readouterr()
    rc = cli.main(["train", *TINY, "--ckpt_interval", "1", "--keep_last", "0", "--out",
                   str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and "Traceback" not in "\n".join(err)
    manifest = out / "checkpoint.json"
    assert err[-1].startswith(f"minitorch train: error: cannot write {out}/ckpt-00000003-")
    assert err[-1].endswith(
        f".safetensors: {os.strerror(getattr(errno, code))}; {advice}; the last checkpoint "
        f"(step 2, {manifest}) is intact; continue with --resume --out {out}")
    assert load_checkpoint(out).step == 2 and not list(out.glob(".*.tmp"))
