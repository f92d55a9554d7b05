"""Root pytest configuration: BLAS threads fixed before numpy loads, and every test in a folder
of its own.

Tests here measure correctness, not speed; one BLAS thread keeps them fast and deterministic on a
shared 2-core machine. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are deliberately left alone.

No test depends on what the user has in the working tree (a `runs/train` left by the README's
`minitorch train`, a stray checkpoint): each one runs in an empty folder of its own, child
processes included (they find the repository's packages through PYTHONPATH, not the current
folder), and a session that changes anything in the repository's `runs/` (a new, changed or
deleted file or folder) fails.
"""

import os
import stat
from pathlib import Path

import pytest

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parent
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)


def _runs_in_tree() -> dict[str, tuple[int, int] | None]:
    """Every path under the repository's runs/: a file with its size and modification time, a
    folder by its name alone (its time moves with what it holds)."""
    found = {}
    for p in sorted((ROOT / "runs").rglob("*")):
        try:
            st = p.lstat()
        except OSError:  # removed while listed
            continue
        found[str(p.relative_to(ROOT))] = (None if stat.S_ISDIR(st.st_mode)
                                           else (st.st_size, st.st_mtime_ns))
    return found


_BEFORE = _runs_in_tree()


@pytest.fixture(autouse=True)
def _own_folder(tmp_path_factory, monkeypatch):
    """The test starts in an empty folder: relative paths (the default --out runs/train) land
    there, not in the user's working tree."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd", numbered=True))


def pytest_sessionfinish(session, exitstatus):
    after = _runs_in_tree()
    changed = sorted(p for p in _BEFORE.keys() ^ after.keys()
                     | {p for p in _BEFORE.keys() & after.keys() if _BEFORE[p] != after[p]})
    if changed and not hasattr(session.config, "workerinput"):
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5
                                          else "")
        session.config.get_terminal_writer().line(
            f"error: tests changed the working tree: {shown} (a test must write inside its own"
            " temporary folder; or another process wrote there meanwhile)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
