"""minitorch.save / minitorch.load as a ported script uses torch.save / torch.load: a model's and
an optimizer's state_dict round trip (training resumes bit-identically), nested containers, any
file name, and a file that is not one of ours refused in one line. The default format has no
pickle; torch's format both ways is test_torch_checkpoints.py."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

import minitorch as mt

NOT_OURS = "is not a file minitorch.save or torch.save wrote"


def _model_and_opt():
    mt.manual_seed(0)
    model = mt.nn.Sequential(mt.nn.Linear(3, 4), mt.nn.ReLU(), mt.nn.Linear(4, 2))
    return model, mt.optim.Adam(model.parameters(), lr=0.01)


def _step(model, opt, x):
    opt.zero_grad()
    model(x).square().mean().backward()
    opt.step()


def test_state_dicts_round_trip_and_training_resumes_bit_identically(tmp_path):
    x = mt.tensor(np.linspace(-1, 1, 15).reshape(5, 3))
    model, opt = _model_and_opt()
    for _ in range(3):
        _step(model, opt, x)
    mt.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": 3}, tmp_path / "ck.pt")
    assert (tmp_path / "ck.pt").exists() and not list(tmp_path.glob("*.npz"))  # name kept
    for _ in range(2):
        _step(model, opt, x)
    want = [p.data.copy() for p in model.parameters()]

    model2, opt2 = _model_and_opt()
    ck = mt.load(tmp_path / "ck.pt")
    model2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["opt"])
    assert ck["step"] == 3
    for _ in range(2):
        _step(model2, opt2, x)
    for got, w in zip([p.data for p in model2.parameters()], want, strict=True):
        np.testing.assert_array_equal(got, w)


def test_nested_values_keep_their_types():
    obj = {"t": mt.tensor([1.0, 2.0], requires_grad=True), "i": mt.tensor([3, 4]),
           "a": np.arange(3.0), 0: ("x", 1, 2.5, None, True, float("inf")),
           "nested": [{"b": mt.tensor(True)}], "n": np.float32(1.5)}
    buf = io.BytesIO()
    mt.save(obj, buf)
    buf.seek(0)
    got = mt.load(buf)
    assert set(got) == set(obj) and isinstance(got[0], tuple) and got[0][:5] == obj[0][:5]
    assert got[0][5] == float("inf") and got["n"] == 1.5
    assert isinstance(got["t"], mt.Tensor) and got["t"].requires_grad
    assert got["t"].dtype == np.float32 and got["i"].dtype == np.int64
    assert isinstance(got["a"], np.ndarray) and got["nested"][0]["b"].dtype == np.bool_
    np.testing.assert_array_equal(got["t"].detach().numpy(), [1.0, 2.0])


def test_what_cannot_be_saved_or_loaded_is_one_clear_error(tmp_path):
    with pytest.raises(TypeError, match="cannot save a object") as info:
        mt.save({"x": object()}, tmp_path / "bad.pt")
    assert "\n" not in str(info.value) and not (tmp_path / "bad.pt").exists()
    (tmp_path / "text.pt").write_text("not an archive")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as z:
        z.writestr("a0.npy", b"")
    for name in ("text.pt", "other.zip"):
        with pytest.raises(ValueError, match=NOT_OURS) as info:
            mt.load(tmp_path / name)
        assert "\n" not in str(info.value)
    with pytest.raises(RuntimeError, match="CPU only"):
        mt.load(tmp_path / "text.pt", map_location="cuda:0")


@pytest.mark.parametrize("fmt", ["minitorch", "torch"])
def test_a_failed_save_leaves_the_old_file(tmp_path, monkeypatch, fmt):
    """Written through io.atomic's one atomic write: fsynced, renamed over the old file."""
    from minitorch.io import atomic

    path = tmp_path / "ck.pt"
    mt.save({"v": mt.tensor([1.0])}, path, format=fmt)
    synced = []
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: synced.append(fd))
    mt.save({"v": mt.tensor([3.0])}, path, format=fmt)
    assert synced and mt.load(path)["v"].tolist() == [3.0]

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(zipfile.ZipFile, "writestr" if fmt == "minitorch" else "open", broken)
    monkeypatch.setattr(np, "savez", broken)
    with pytest.raises(OSError):
        mt.save({"v": mt.tensor([2.0])}, path, format=fmt)
    monkeypatch.undo()
    assert mt.load(path)["v"].tolist() == [3.0] and len(list(tmp_path.iterdir())) == 1


def _saved(tmp_path, obj, name="ck.pt"):
    path = tmp_path / name
    mt.save(obj, path)
    return path


def test_damaged_or_foreign_files_are_one_clear_error(tmp_path):
    good = _saved(tmp_path, {"w": mt.randn(50, 50)}).read_bytes()
    cases = {"truncated.pt": good[:-10], "empty.pt": b"",
             "flipped.pt": good[:200] + bytes([good[200] ^ 0xFF]) + good[201:]}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    np.save(tmp_path / "plain.npy", np.ones(3))
    for name in [*cases, "plain.npy"]:
        with pytest.raises(ValueError, match=NOT_OURS) as info:
            mt.load(tmp_path / name)
        assert "\n" not in str(info.value), name


def test_a_hostile_archive_allocates_no_more_than_it_holds(tmp_path):
    """A compressed entry (a decompression bomb) and a header declaring more than the entry
    holds are refused before anything is read."""
    structure = np.frombuffer(b'{"array": 0}', np.uint8)
    np.savez_compressed(tmp_path / "bomb.npz", a0=np.zeros(10**6), **{"structure.json": structure})
    forged = tmp_path / "forged.npz"
    with zipfile.ZipFile(forged, "w") as z:
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            header, {"descr": "<f8", "fortran_order": False, "shape": (10**11,)})
        z.writestr("a0.npy", b"\x93NUMPY\x01\x00" + header.getvalue()[8:] + b"\0" * 64)
        buf = io.BytesIO()
        np.save(buf, structure)
        z.writestr("structure.json.npy", buf.getvalue())
    for path in (tmp_path / "bomb.npz", forged):
        with pytest.raises(ValueError, match=NOT_OURS):
            mt.load(path)


def test_an_object_array_is_refused_before_the_old_file_is_touched(tmp_path):
    path = _saved(tmp_path, {"v": mt.tensor([1.0])})
    with pytest.raises(TypeError, match="dtype object"):
        mt.save({"a": np.array([1, "x"], dtype=object)}, path)
    assert mt.load(path)["v"].tolist() == [1.0]


def test_a_scheduler_state_dict_round_trips():
    """MultiStepLR keeps its milestones in a Counter; it comes back a Counter."""
    def make():
        opt = mt.optim.SGD([mt.tensor([1.0], requires_grad=True)], lr=1.0)
        return opt, mt.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 2, 4], gamma=0.5)

    opt, sched = make()
    for _ in range(3):
        opt.step()
        sched.step()
    buf = io.BytesIO()
    mt.save({"opt": opt.state_dict(), "sched": sched.state_dict()}, buf)
    buf.seek(0)
    opt2, sched2 = make()
    ck = mt.load(buf)
    assert type(ck["sched"]["milestones"]) is type(sched.state_dict()["milestones"])  # Counter
    opt2.load_state_dict(ck["opt"])
    sched2.load_state_dict(ck["sched"])
    for _ in range(3):
        opt.step(), opt2.step()
        sched.step(), sched2.step()
    assert sched2.get_last_lr() == sched.get_last_lr() == [0.125]  # torch's sequence


def test_torch_load_arguments_scripts_pass(tmp_path):
    path = _saved(tmp_path, {"w": mt.ones(2)})
    for kwargs in ({"map_location": "cpu"}, {"map_location": lambda storage, loc: storage},
                   {"map_location": {"cuda:0": "cpu"}}, {"weights_only": False},
                   {"weights_only": True}):
        assert mt.load(path, **kwargs)["w"].tolist() == [1.0, 1.0]
