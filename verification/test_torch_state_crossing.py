"""What the ported scripts (test_ported_torch_scripts.py) found when a checkpoint crossed from
one library to the other, each checked here on its own against torch: state_dict lists a tied
parameter under every name (torch's keys), load_state_dict takes strict= and returns torch's
(missing_keys, unexpected_keys); an optimizer loads torch's state (tensors, a float step); and
torch.save inside `minitorch run` writes a file torch can load."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import minitorch as mt
from minitorch.io import serialization

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.torch


def tied(lib):
    """An embedding and an output head sharing one matrix, inside nested containers."""
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = lib.nn.ModuleDict(dict(wte=lib.nn.Embedding(5, 3),
                                               ln=lib.nn.LayerNorm(3)))
            self.head = lib.nn.Linear(3, 5, bias=False)
            self.body.wte.weight = self.head.weight
            self.register_buffer("mask", lib.ones(2))
    return Net()


def test_state_dict_lists_a_tied_parameter_under_every_name_as_torch():
    ref, got = tied(torch), tied(mt)
    assert list(got.state_dict()) == list(ref.state_dict())
    assert "head.weight" in got.state_dict() and "body.wte.weight" in got.state_dict()
    assert [n for n, _ in got.named_parameters()] == [n for n, _ in ref.named_parameters()]


def test_load_state_dict_reads_torchs_state_dict_of_a_tied_model(tmp_path):
    ref = tied(torch)
    torch.save(ref.state_dict(), tmp_path / "sd.pt")
    got = tied(mt)
    keys = got.load_state_dict(mt.load(tmp_path / "sd.pt"))
    assert keys == ([], []) and keys.missing_keys == [] and keys.unexpected_keys == []
    assert got.body.wte.weight is got.head.weight  # still tied
    np.testing.assert_array_equal(got.head.weight.detach().numpy(),
                                  ref.head.weight.detach().numpy())


def test_load_state_dict_strict_false_returns_torchs_keys():
    ref_sd, got_sd = tied(torch).state_dict(), tied(mt).state_dict()
    for sd in (ref_sd, got_sd):
        del sd["body.ln.bias"]
        sd["extra"] = sd["mask"]
    ref = tied(torch).load_state_dict(ref_sd, strict=False)
    got = tied(mt).load_state_dict(got_sd, strict=False)
    assert (got.missing_keys, got.unexpected_keys) == (ref.missing_keys, ref.unexpected_keys)
    with pytest.raises(KeyError, match="missing keys \\['body.ln.bias'\\], unexpected keys"):
        tied(mt).load_state_dict(got_sd)


@pytest.mark.parametrize("name", ["AdamW", "Adam", "RMSprop", "Adagrad", "SGD"])
def test_optimizer_resumes_from_torchs_saved_state(tmp_path, name):
    """torch steps 3 times and saves its optimizer; minitorch loads that file (tensors, torch's
    float step) and both take 2 more steps from the same weights and gradients."""
    rng = np.random.default_rng(0)
    w0, grads = rng.standard_normal((4, 3)), rng.standard_normal((5, 4, 3))
    kw = dict(lr=0.1, momentum=0.9) if name == "SGD" else dict(lr=0.1)
    tp = torch.nn.Parameter(torch.tensor(w0))
    topt = getattr(torch.optim, name)([tp], **kw)
    for g in grads[:3]:
        tp.grad = torch.tensor(g)
        topt.step()
    torch.save(topt.state_dict(), tmp_path / "opt.pt")
    mp = mt.nn.Parameter(mt.tensor(tp.detach().numpy().copy()))
    mopt = getattr(mt.optim, name)([mp], **kw)
    mopt.load_state_dict(mt.load(tmp_path / "opt.pt"))
    for g in grads[3:]:
        tp.grad, mp.grad = torch.tensor(g), mt.tensor(g)
        topt.step()
        mopt.step()
    np.testing.assert_allclose(mp.detach().numpy(), tp.detach().numpy(), rtol=1e-14, atol=1e-15)


def test_optimizer_refuses_a_step_that_is_not_a_whole_number():
    p = mt.nn.Parameter(mt.zeros(2))
    opt = mt.optim.Adam([p])
    state = {"step": np.array(2.5), "exp_avg": np.zeros(2), "exp_avg_sq": np.zeros(2)}
    sd = {"state": {0: state}, "param_groups": opt.state_dict()["param_groups"]}
    with pytest.raises(ValueError, match="Adam state 'step' must be an int >= 0"):
        opt.load_state_dict(sd)


def test_torch_save_inside_minitorch_run_writes_torchs_format(tmp_path):
    script = tmp_path / "save.py"
    script.write_text(textwrap.dedent("""
        import torch
        torch.save({"w": torch.arange(6.0).view(2, 3), "step": 7}, "ckpt.pt")
        torch.save({"w": torch.ones(2)}, "own.npz", format="minitorch")
    """))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "minitorch", "run", str(script)], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    ckpt = torch.load(tmp_path / "ckpt.pt", weights_only=True)  # real torch reads it
    assert ckpt["step"] == 7 and ckpt["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    with pytest.raises(RuntimeError):  # an explicit format= is still honoured
        torch.load(tmp_path / "own.npz", weights_only=True)


def test_save_default_is_minitorchs_outside_run_and_restored_after_it(tmp_path):
    from minitorch.torch_alias import run_script

    (tmp_path / "s.py").write_text("import torch\ntorch.save(torch.ones(1), 'a.pt')\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert run_script(str(tmp_path / "s.py"), []) == 0
    finally:
        os.chdir(cwd)
    assert torch.load(tmp_path / "a.pt", weights_only=True).tolist() == [1.0]
    mt.save(mt.ones(1), tmp_path / "b.pt")  # minitorch's own default again
    with pytest.raises(RuntimeError):
        torch.load(tmp_path / "b.pt", weights_only=True)
    with pytest.raises(ValueError, match="format must be one of"):
        serialization.set_default_format("pickle")
