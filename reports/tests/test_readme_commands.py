"""The suite does not depend on what a user did in the working tree: in a copy of it, every
`minitorch` command of the README runs first (leaving runs/demo, runs/train, a script's out/ ...
as a user would), and then the suite's tests that run the command line, the trainer and
checkpoints pass there.

The commands run as written, in the README's order, with their runs shortened (--iters 2 and one
eval batch) so the test takes a minute: the folders they leave are the same, and each must
succeed (two that wrote to one folder would fail here). `make` lines are the suite itself, the
Tiny Shakespeare lines fetch a file (a small stand-in corpus is given instead), and `minitorch
run`'s train.py / sample.py are the user's own scripts (stand-ins that train and save to out/).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
BIN = Path(sys.executable).parent
SHORT = ["--eval_iters", "1", "--eval_interval", "1", "--sample_tokens", "4", "--plot", "False"]
# The tests that run minitorch's command line or read and write run folders, checkpoints and
# files by path: the ones a user's working tree could reach.
SENSITIVE = ["verification/test_cli.py", "verification/test_cli_errors.py",
             "verification/test_checkpoint.py", "verification/test_run_ownership.py",
             "verification/test_run_script.py", "verification/test_tensorboard.py",
             "verification/test_save_load.py", "reports/tests/test_readme.py"]

TRAIN_PY = """\
import os, sys
import torch
args = dict(a[2:].split("=", 1) for a in sys.argv[1:])
rank = int(os.environ.get("RANK", 0))
if "RANK" in os.environ:
    torch.distributed.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
if "RANK" in os.environ:
    model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
for _ in range(2):
    loss = model(torch.randn(int(args.get("batch_size", 4)), 4)).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
if rank == 0:
    os.makedirs("out", exist_ok=True)
    torch.save({"model": model.state_dict()}, os.path.join("out", "ckpt.pt"))
    print(f"loss {loss.item():.4f}")
if "RANK" in os.environ:
    torch.distributed.destroy_process_group()
"""
SAMPLE_PY = """\
import torch
ckpt = torch.load("out/ckpt.pt")
print(sorted(k.split(".")[-1] for k in ckpt["model"]))
"""


def readme_commands() -> list[str]:
    """Every command line of the README's bash blocks that runs minitorch (itself, through
    `python -m` or under mpiexec)."""
    lines = []
    for block in re.findall(r"^```bash\n(.*?)^```", README, flags=re.S | re.M):
        for line in block.splitlines():
            first = line.split()[:1]
            if first == ["minitorch"] or line.startswith("python -m minitorch ") or (
                    first == ["mpiexec"] and " minitorch " in line):
                lines.append(line)
    return lines


def shortened(words: list[str]) -> list[str]:
    """The command with its run cut to two steps (three when it resumes)."""
    if "train" not in words:
        return words
    if "--iters" in words:
        i = words.index("--iters")
        words = words[:i] + words[i + 2:]
    return [*words, "--iters", "3" if "--resume" in words else "2", *SHORT]


def test_the_readme_has_the_commands_this_test_runs():
    commands = readme_commands()
    kinds = {w for c in commands for w in ("train", "sample", "trace", "run") if w in c.split()}
    assert kinds == {"train", "sample", "trace", "run"}, commands


@pytest.mark.slow
def test_the_suite_passes_after_every_readme_command(tmp_path):
    tree = tmp_path / "tree"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_bytes((ROOT / name).read_bytes())
    (tree / "train.py").write_text(TRAIN_PY)
    (tree / "sample.py").write_text(SAMPLE_PY)
    corpus = tmp_path / "input.txt"
    corpus.write_text((ROOT / "minitorch/data/default_corpus.txt").read_text()[:20000])
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(tree), "MINITORCH_TINYSHAKESPEARE": str(corpus),
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}  # README: as root
    ran = []
    for line in readme_commands():
        words = [w.replace("$MINITORCH_TINYSHAKESPEARE", str(corpus)).replace("FILE", str(corpus))
                 for w in shlex.split(os.path.expandvars(line), comments=True)]
        if words[:3] == ["python", "-m", "minitorch"]:
            words[0] = sys.executable
        proc = subprocess.run(shortened(words), cwd=tree, env=env, capture_output=True,
                              text=True, timeout=600, stdin=subprocess.DEVNULL)
        # Each runs as written; the several-machines one, with no hostfile here, refuses in
        # its one line.
        expected = 2 if "--hostfile" in words else 0
        assert proc.returncode == expected, f"{line}\n{proc.stderr[-3000:]}"
        assert "Traceback" not in proc.stderr, f"{line}\n{proc.stderr[-3000:]}"
        ran.append(line)
    left = {p.name for p in (tree / "runs").iterdir()}
    assert {"demo", "train", "bpe", "dp"} <= left and (tree / "out" / "ckpt.pt").is_file(), left
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                           *SENSITIVE], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert re.search(r"\d+ passed", proc.stdout), proc.stdout[-2000:]


@pytest.mark.parametrize("write, named", [
    ("(ROOT / 'runs' / 'stray').mkdir()", "runs/stray"),
    ("(ROOT / 'runs' / 'demo' / 'metrics.jsonl').write_text('{}')", "runs/demo/metrics.jsonl"),
    ("(ROOT / 'runs' / 'demo' / 'metrics.jsonl').unlink()", "runs/demo/metrics.jsonl"),
    ("Path('runs/train').mkdir(parents=True)", None),  # relative: the test's own folder
])
def test_a_test_that_changes_the_trees_runs_fails_the_session(tmp_path, write, named):
    """The root conftest's guard, in a stand-in repository holding only that conftest and a
    user's run (runs/demo): a test that adds, changes or deletes anything under runs/ fails
    the session, naming the path."""
    (tmp_path / "conftest.py").write_text((ROOT / "conftest.py").read_text())
    (tmp_path / "runs" / "demo").mkdir(parents=True)
    (tmp_path / "runs" / "demo" / "metrics.jsonl").write_text('{"kind": "step"}\n')
    (tmp_path / "test_write.py").write_text(
        "from pathlib import Path\n"
        "ROOT = Path(__file__).parent\n"
        f"def test_write():\n    {write}\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", str(tmp_path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert "1 passed" in proc.stdout, proc.stdout
    if named is None:
        assert proc.returncode == 0 and "changed the working tree" not in proc.stdout
    else:
        assert proc.returncode == 1, proc.stdout
        assert f"tests changed the working tree: {named} (" in proc.stdout, proc.stdout
