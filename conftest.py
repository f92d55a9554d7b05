"""Root pytest configuration: BLAS threads fixed before numpy loads, and every test in a folder
of its own.

Tests here measure correctness, not speed; one BLAS thread keeps them fast and deterministic on a
shared 2-core machine. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are deliberately left alone.

No test depends on what the user has in the working tree (a `runs/train` left by the README's
`minitorch train`, a stray checkpoint): each one runs in an empty folder of its own, child
processes included (they find the repository's packages through PYTHONPATH, not the current
folder), and a session that leaves anything new in the repository's `runs/` fails.
"""

import os
from pathlib import Path

import pytest

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parent
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)


def _runs_in_tree() -> set[str]:
    return {p.name for p in (ROOT / "runs").iterdir()} if (ROOT / "runs").is_dir() else set()


_BEFORE = _runs_in_tree()


@pytest.fixture(autouse=True)
def _own_folder(tmp_path_factory, monkeypatch):
    """The test starts in an empty folder: relative paths (the default --out runs/train) land
    there, not in the user's working tree."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd", numbered=True))


def pytest_sessionfinish(session, exitstatus):
    written = sorted(_runs_in_tree() - _BEFORE)
    if written and not hasattr(session.config, "workerinput"):
        session.config.get_terminal_writer().line(
            f"error: tests wrote into the working tree: {', '.join('runs/' + w for w in written)}"
            " (a test must write inside its own temporary folder)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
