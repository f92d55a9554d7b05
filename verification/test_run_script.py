"""`minitorch run`: a script whose imports say torch runs on minitorch unchanged (torch and every
torch.* module are minitorch's), with its own argv and exit status; what minitorch lacks fails
at the line that names it, saying so. Each script here is run in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "minitorch", "run", str(script), *args],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)


def test_torch_and_its_modules_are_minitorchs(tmp_path):
    out = run(tmp_path, """
        import sys
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.optim.lr_scheduler import StepLR
        from torch.utils.data import DataLoader
        import minitorch
        assert torch is minitorch and nn is minitorch.nn and F is minitorch.nn.functional
        assert 'torch' in sys.modules and sys.modules['torch.nn'] is minitorch.nn
        x = torch.randn(4, 3, requires_grad=True)
        nn.Linear(3, 2)(x).sum().backward()
        print(tuple(x.grad.shape), sys.argv[1:], __name__)
    """, "--lr=0.1", "-v", "data.txt")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "(4, 3) ['--lr=0.1', '-v', 'data.txt'] __main__"


@pytest.mark.parametrize("args", [["--", "--a"], ["--a", "--", "b"], ["x", "--nproc", "2"],
                                  ["--nproc=2", "--", "--"]])
def test_the_scripts_argv_is_pythons(tmp_path, args):
    """Everything after SCRIPT reaches it verbatim, a `--` included, as `python SCRIPT ...`."""
    source = "import sys; print(sys.argv[1:])\n"
    out = run(tmp_path, source, *args)
    (tmp_path / "plain.py").write_text(source)
    plain = subprocess.run([sys.executable, str(tmp_path / "plain.py"), *args],
                           capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == plain.stdout == f"{args}\n"


def test_the_scripts_folder_is_on_the_path_as_python_puts_it(tmp_path):
    (tmp_path / "model.py").write_text("import torch\nWIDTH = torch.ones(5).numel()\n")
    out = run(tmp_path, "from model import WIDTH\nprint(WIDTH)\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "5"


@pytest.mark.parametrize("source, code", [("import sys; sys.exit(3)", 3), ("pass", 0),
                                          ("raise SystemExit('bye')", 1)])
def test_the_exit_status_is_the_scripts(tmp_path, source, code):
    assert run(tmp_path, source).returncode == code


def test_a_module_minitorch_lacks_fails_at_its_import_line(tmp_path):
    out = run(tmp_path, "x = 1\nimport torch.fft\n")
    assert out.returncode == 1
    assert 'script.py", line 2' in out.stderr
    assert "No module named 'torch.fft': minitorch does not have torch.fft" in out.stderr
    assert "runpy" not in out.stderr and "torch_alias.py\", line" not in out.stderr.split(
        "script.py")[0]  # the traceback starts at the script


@pytest.mark.parametrize("line, message", [
    ("torch.fft_rfft(1)", "torch.fft_rfft: minitorch does not have it"),
    ("torch.ones(2).unfold(0, 1, 1)", "torch.Tensor.unfold: minitorch does not have it"),
    ("torch.zeros(2, dtype=torch.bfloat16)", "minitorch does not compute in bfloat16"),
])
def test_a_name_minitorch_lacks_fails_at_the_line_that_uses_it(tmp_path, line, message):
    out = run(tmp_path, f"import torch\nprint('before')\n{line}\nprint('after')\n")
    assert out.returncode == 1 and out.stdout == "before\n"
    assert 'script.py", line 3' in out.stderr and message in out.stderr


def test_a_missing_script_is_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "minitorch", "run", str(tmp_path / "no.py")],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 2
    assert out.stderr.strip() == f"minitorch run: error: no script at {tmp_path / 'no.py'}"


def test_in_process_the_alias_goes_and_a_real_torch_comes_back(tmp_path):
    """run_script in a process that imported torch (this one): the script sees minitorch, and
    afterwards torch is torch again (its modules set aside, not re-imported)."""
    import torch

    import minitorch
    from minitorch.torch_alias import run_script

    script = tmp_path / "s.py"
    script.write_text("import torch\nimport torch.nn\nimport minitorch\n"
                      "assert torch is minitorch and torch.nn is minitorch.nn\n")
    assert run_script(str(script), []) == 0
    assert sys.modules["torch"] is torch and sys.modules["torch.nn"] is torch.nn
    assert minitorch is not torch
    assert not any(type(f).__name__ == "TorchAlias" for f in sys.meta_path)
