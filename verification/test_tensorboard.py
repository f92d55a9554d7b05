"""minitorch.utils.tensorboard.SummaryWriter against torch's: the same calls write the same
records (byte for byte, hparams' map order aside), TensorBoard's own reader reads them back
(tags, steps, float32 values, walltimes), and it drops a record whose CRC does not match."""

from __future__ import annotations

import os
import re
import socket
import struct
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

import minitorch as mt
from minitorch.utils.tensorboard import SummaryWriter
from minitorch.utils.tensorboard import records as rec

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import (  # noqa: E402
    RawEventFileLoader,
)
from tensorboard.compat.proto import event_pb2  # noqa: E402
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c  # noqa: E402
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData  # noqa: E402
from torch.utils.tensorboard import SummaryWriter as TorchWriter  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WALL = 1_700_000_000.25


def program(w, lib):
    """One script, run with minitorch (lib=mt) and with torch (lib=torch)."""
    for i, v in enumerate([0.1, 3, 0.0, -2.5, 1e40, -1e-50, float("nan"), float("-inf"), True]):
        w.add_scalar("loss/train", v, i, walltime=WALL + i)
    w.add_scalar("tensor0d", lib.tensor(2.5, requires_grad=True), 10, walltime=WALL)
    w.add_scalar("tensor1", lib.tensor([1.25], dtype=lib.float64), 11, walltime=WALL)
    w.add_scalar("int_tensor", lib.tensor(7), 12, walltime=WALL)
    w.add_scalar("numpy", np.float64(1 / 3), np.int64(13), walltime=WALL)
    w.add_scalar("big_step", 1.0, 2**40, walltime=WALL)
    w.add_scalar("neg_step", 1.0, -5, walltime=WALL)
    w.add_scalar("no_step", 4.0, walltime=WALL)
    w.add_scalar("new", 0.1, 1, walltime=WALL, new_style=True)
    w.add_scalar("new64", 0.1, 1, walltime=WALL, new_style=True, double_precision=True)
    w.add_scalar("new0", 0.0, 2, walltime=WALL, new_style=True)
    w.add_scalars("run/x", {"a": 1.0, "b": lib.tensor(2.0)}, 3, walltime=WALL)
    w.add_scalars("run/x", {"a": 5.0}, 4, walltime=WALL + 1)
    w.add_text("note", "héllo ✓ **md**", 0, walltime=WALL)
    w.add_text("empty", "", 1, walltime=WALL)
    rng = np.random.default_rng(0)
    data = rng.standard_normal(1000)
    w.add_histogram("h/tf", data, 0, walltime=WALL)
    w.add_histogram("h/tensor", lib.tensor(data.astype(np.float32)), 1, walltime=WALL)
    w.add_histogram("h/zeros", np.zeros(5), 2, walltime=WALL)
    w.add_histogram("h/positive", np.array([1.0, 2.0, 3.0, 4.5]), 3, walltime=WALL)
    w.add_histogram("h/ten", data, 4, bins=10, walltime=WALL)
    w.add_histogram("h/auto", data, 5, bins="auto", walltime=WALL)
    w.add_histogram("h/max", data, 6, max_bins=7, walltime=WALL)
    w.add_histogram("h/one", np.array(3.0), 7, walltime=WALL)
    w.add_hparams({"lr": 0.1, "n": 3, "opt": "adam", "flag": True, "skip": None},
                  {"hp/acc": 0.5, "hp/loss": lib.tensor(1.5)},
                  hparam_domain_discrete={"opt": ["adam", "sgd"], "n": [1, 3]},
                  run_name="hp", global_step=7)


def read_runs(root: Path) -> dict[str, list[bytes]]:
    """Each run directory (relative path) -> its records, files in name order."""
    runs: dict[str, list[bytes]] = {}
    for f in sorted(root.rglob("events.out.tfevents.*")):
        runs.setdefault(str(f.parent.relative_to(root)), []).extend(
            RawEventFileLoader(str(f)).Load())
    return runs


def decoded(raw: bytes, keep_time: bool = True):
    e = event_pb2.Event.FromString(raw)
    if not keep_time:
        e.wall_time = 0
    return e


def hparams_content(e):
    (value,) = e.summary.value
    assert value.metadata.plugin_data.plugin_name == "hparams"
    content = value.metadata.plugin_data.content
    value.metadata.plugin_data.content = b""
    return e, HParamsPluginData.FromString(content)


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    mine, theirs = tmp_path_factory.mktemp("minitorch"), tmp_path_factory.mktemp("torch")
    with SummaryWriter(mine) as w:
        program(w, mt)
    with TorchWriter(theirs) as w:
        program(w, torch)
    return read_runs(mine), read_runs(theirs), mine


def test_same_runs_and_records_as_torch(both):
    mine, theirs, _ = both
    assert sorted(mine) == sorted(theirs) == [".", "hp", "run_x_a", "run_x_b"]
    for run in theirs:
        assert len(mine[run]) == len(theirs[run]), run
        first, first_torch = decoded(mine[run][0]), decoded(theirs[run][0])
        assert first.file_version == first_torch.file_version == "brain.Event:2"
        for a, b in zip(mine[run][1:], theirs[run][1:]):
            if run == "hp":  # time.time() walltimes, and a map whose order protobuf leaves open
                a, b = decoded(a, keep_time=False), decoded(b, keep_time=False)
                assert a == b or hparams_content(a) == hparams_content(b)
            else:
                assert a == b, (decoded(a), decoded(b))


def test_tensorboard_reads_back_tags_steps_values_walltimes(both):
    _, _, root = both
    acc = EventAccumulator(str(root), size_guidance={"scalars": 0, "histograms": 0,
                                                     "tensors": 0})
    acc.Reload()
    tags = acc.Tags()
    assert {"loss/train", "tensor0d", "numpy", "big_step", "neg_step"} <= set(tags["scalars"])
    assert {"note/text_summary", "new", "new64"} <= set(tags["tensors"])
    assert {"h/tf", "h/tensor", "h/zeros", "h/max"} <= set(tags["histograms"])
    inputs = [0.1, 3, 0.0, -2.5, 1e40, -1e-50, float("nan"), float("-inf"), True]
    got = acc.Scalars("loss/train")
    assert [e.step for e in got] == list(range(len(inputs)))
    assert [e.wall_time for e in got] == [WALL + i for i in range(len(inputs))]
    with np.errstate(over="ignore"):
        want = np.array(inputs, dtype=np.float64).astype(np.float32)
    np.testing.assert_array_equal(np.array([e.value for e in got], np.float32), want)
    assert [(e.step, e.value) for e in acc.Scalars("big_step")] == [(2**40, 1.0)]
    assert [(e.step, e.value) for e in acc.Scalars("neg_step")] == [(-5, 1.0)]
    assert acc.Scalars("numpy")[0].value == float(np.float32(1 / 3))
    text = acc.Tensors("note/text_summary")[0]
    assert text.tensor_proto.string_val[0].decode() == "héllo ✓ **md**"
    h = acc.Histograms("h/positive")[0].histogram_value
    assert (h.min, h.max, h.num, h.sum, h.sum_squares) == (1.0, 4.5, 4, 10.5, 34.25)
    assert sum(h.bucket) == 4 and len(h.bucket) == len(h.bucket_limit)


def test_a_corrupted_byte_is_dropped_by_the_reader(tmp_path):
    """Negative control for the framing: TensorBoard checks both CRCs and stops at a bad one."""
    with SummaryWriter(tmp_path) as w:
        for i in range(5):
            w.add_scalar("x", float(i), i, walltime=WALL)
    (path,) = tmp_path.glob("events.out.tfevents.*")
    good = path.read_bytes()
    assert len(list(RawEventFileLoader(str(path)).Load())) == 6
    offsets, pos = [], 0
    while pos < len(good):
        offsets.append(pos)
        pos += 16 + struct.unpack("<Q", good[pos:pos + 8])[0]
    assert pos == len(good) and len(offsets) == 6
    for where, kept in [(offsets[3] + 12 + 5, 3), (offsets[4] + 2, 4), (len(good) - 1, 5)]:
        bad = bytearray(good)  # a data byte of record 3, the length of 4, the last data CRC
        bad[where] ^= 0x01
        path.write_bytes(bytes(bad))
        assert len(list(RawEventFileLoader(str(path)).Load())) == kept, where


def test_crc32c_and_mask_match_tensorboard():
    assert rec.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720)
    rng = np.random.default_rng(1)
    for n in [0, 1, 7, 8, 100, 4097]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert rec.masked_crc32c(data) == masked_crc32c(data), n


def test_varints_as_protobuf():
    for step in [0, 1, 127, 128, 300, 2**31, 2**63 - 1, -1, -(2**63)]:
        want = event_pb2.Event(wall_time=1.5, step=step).SerializeToString()
        assert rec.event(1.5, step) == want, step


def test_file_names_default_log_dir_and_suffix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w, t = SummaryWriter(comment="_c"), TorchWriter(comment="_c")
    w.close(), t.close()
    pattern = r"runs/(\w{3}\d\d_\d\d-\d\d-\d\d)_" + re.escape(socket.gethostname()) + "_c"
    for log_dir in (w.log_dir, t.log_dir):
        stamp = re.fullmatch(pattern, log_dir).group(1)
        assert abs((datetime.strptime(stamp, "%b%d_%H-%M-%S")
                    - datetime.now().replace(year=1900, microsecond=0)).total_seconds()) < 60
    with SummaryWriter(tmp_path / "s", filename_suffix=".v2") as w:
        w.add_scalar("x", 1.0)
    (name,) = os.listdir(tmp_path / "s")
    host = re.escape(socket.gethostname())
    assert re.fullmatch(rf"events\.out\.tfevents\.\d{{10}}\.{host}\.{os.getpid()}\.\d+\.v2", name)


def test_purge_step_close_and_reopen_as_torch(tmp_path):
    def script(w):
        w.add_scalar("x", 1.0, 6, walltime=WALL)
        w.close()
        w.close()  # a second close does nothing
        w.add_scalar("x", 2.0, 7, walltime=WALL)  # a closed writer opens a new file
        w.close()

    runs = {}
    for name, cls in [("mine", SummaryWriter), ("torch", TorchWriter)]:
        script(cls(tmp_path / name, purge_step=5))
        runs[name] = sorted((tmp_path / name).iterdir())
        assert len(runs[name]) == 2
    mine, theirs = ([decoded(r, keep_time=False) for f in runs[k]
                     for r in RawEventFileLoader(str(f)).Load()][1:] for k in ("mine", "torch"))
    mine = [e for e in mine if not e.HasField("source_metadata")]
    theirs = [e for e in theirs if not e.HasField("source_metadata")]
    assert mine == theirs and len(mine) == 4  # purge's two events, then x at 6 and at 7


def test_events_reach_the_file_at_flush_and_every_max_queue(tmp_path):
    def count(d):
        return sum(len(list(RawEventFileLoader(str(f)).Load())) for f in d.iterdir())

    w = SummaryWriter(tmp_path / "q", max_queue=3)
    w.add_scalar("x", 1.0)
    w.add_scalar("x", 2.0)
    assert count(tmp_path / "q") == 1  # the file version only: two events wait
    w.add_scalar("x", 3.0)
    assert count(tmp_path / "q") == 4
    w.add_scalar("x", 4.0)
    w.flush()
    assert count(tmp_path / "q") == 5
    w.close()


def test_a_writer_never_closed_writes_its_events_at_exit(tmp_path):
    code = ("from minitorch.utils.tensorboard import SummaryWriter\n"
            f"w = SummaryWriter({str(tmp_path)!r})\n"
            "for i in range(3): w.add_scalar('x', float(i), i)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("x")] == [(0, 0.0), (1, 1.0), (2, 2.0)]


def test_works_without_tensorboard_and_protobuf(tmp_path):
    code = ("import sys\n"
            "for m in ('tensorboard', 'google', 'google.protobuf', 'torch'):\n"
            "    sys.modules[m] = None\n"
            "from minitorch.utils.tensorboard import SummaryWriter\n"
            f"with SummaryWriter({str(tmp_path)!r}) as w: w.add_scalar('x', 1.0, 2)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    (path,) = tmp_path.glob("events.out.tfevents.*")
    ((step, value),) = [(e.step, e.summary.value[0].simple_value)
                        for e in map(decoded, RawEventFileLoader(str(path)).Load())
                        if e.HasField("summary")]
    assert (step, value) == (2, 1.0)


@pytest.mark.parametrize("call, error, words", [
    (lambda w: w.add_scalar("x", [1.0]), TypeError, "scalar_value must be a number"),
    (lambda w: w.add_scalar("x", np.ones(3)), ValueError, "one element, got shape (3,)"),
    (lambda w: w.add_scalar("x", "1.0"), TypeError, "got str"),
    (lambda w: w.add_scalar("x", 1 + 2j), TypeError, "got complex"),
    (lambda w: w.add_scalar(3, 1.0), TypeError, "tag must be a str, got int"),
    (lambda w: w.add_scalar("x", 1.0, "a"), TypeError, "global_step must be an int, got str"),
    (lambda w: w.add_scalars("x", [1.0]), TypeError, "tag_scalar_dict must be a dict"),
    (lambda w: w.add_text("t", 5), TypeError, "text_string must be a str, got int"),
    (lambda w: w.add_histogram("h", np.array([])), ValueError, "values has no element"),
    (lambda w: w.add_histogram("h", np.array([1e30])), ValueError, "no value falls inside"),
    (lambda w: w.add_hparams([], {}), TypeError, "should be dictionary"),
    (lambda w: w.add_hparams({"a": [1]}, {}), ValueError, "got list"),
    (lambda w: w.add_hparams({"a": 1}, {}, {"a": ["x"]}), TypeError, "hparam_domain_discrete"),
])
def test_bad_arguments_in_one_line(tmp_path, call, error, words):
    with SummaryWriter(tmp_path) as w, pytest.raises(error) as info:
        call(w)
    assert words in str(info.value) and "\n" not in str(info.value)
