"""The import contracts in pyproject.toml ([tool.importlinter]) hold, and they catch what they
promise to: an upward import hidden inside a function, and a cycle between two siblings."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["minitorch", "verification", "memory", "benchmarks", "reports", "artifacts"]
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed")


def lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT), "--config", str(root / "pyproject.toml")], cwd=root,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A copy of the repository's packages and contracts, to plant faults in."""
    root = tmp_path_factory.mktemp("layering")
    shutil.copy(ROOT / "pyproject.toml", root)
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, root / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "out", "*.json"))
    return root


def test_layering_contracts_hold(tree):
    result = lint(tree)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 broken" in result.stdout


def lint_with(tree: Path, module: str, line: str) -> subprocess.CompletedProcess:
    """lint-imports on the copy with `line` planted inside a function at the end of `module`."""
    path = tree.joinpath(*module.split(".")).with_suffix(".py")
    original = path.read_text()
    path.write_text(original + f"\n\ndef _late():\n    {line}  # noqa: F401\n")
    try:
        return lint(tree)
    finally:
        path.write_text(original)


def test_layering_catches_an_upward_import_inside_a_function(tree):
    result = lint_with(tree, "minitorch.engine.graph", "from ..train import loop")
    assert result.returncode != 0
    assert "minitorch.engine.graph -> minitorch.train.loop" in result.stdout


def test_layering_catches_a_cycle_between_siblings(tree):
    result = lint_with(tree, "minitorch.engine.registry", "from . import tensor")
    assert result.returncode != 0
    assert "No cycles are allowed in minitorch.engine" in result.stdout
    assert ".registry -> .tensor" in result.stdout
