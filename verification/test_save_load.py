"""minitorch.save / minitorch.load as a ported script uses torch.save / torch.load: a model's and
an optimizer's state_dict round trip (training resumes bit-identically), nested containers, any
file name, and a file that is not one of ours refused in one line. Nothing is unpickled."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

import minitorch as mt


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
        with pytest.raises(ValueError, match="is not a file minitorch.save wrote") as info:
            mt.load(tmp_path / name)
        assert "\n" not in str(info.value)
    with pytest.raises(RuntimeError, match="CPU only"):
        mt.load(tmp_path / "text.pt", map_location="cuda:0")


def test_a_failed_save_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ck.pt"
    mt.save({"v": mt.tensor([1.0])}, path)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken)
    with pytest.raises(OSError):
        mt.save({"v": mt.tensor([2.0])}, path)
    monkeypatch.undo()
    assert mt.load(path)["v"].tolist() == [1.0] and len(list(tmp_path.iterdir())) == 1
