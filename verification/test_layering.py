"""The import contracts in pyproject.toml ([tool.importlinter]) hold, and they catch what they
promise to: an upward import hidden inside a function (in the engine, utils, cuda, backends), a
cycle between two siblings, and a top-level module of minitorch that no layer names."""

from __future__ import annotations

import pkgutil
import re
import shutil
import subprocess
import sys
import tomllib
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
    path = tree.joinpath(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
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


@pytest.mark.parametrize("module, line", [
    ("minitorch.utils", "from ..train import loop"),
    ("minitorch.utils.tensorboard.writer", "from ...train import loop"),
    ("minitorch.cuda", "from ..train import loop"),
    ("minitorch.amp", "from .train import loop"),
    ("minitorch.backends", "from .train import loop"),
])
def test_layering_catches_an_upward_import_from_the_lower_modules(tree, module, line):
    result = lint_with(tree, module, line)
    assert result.returncode != 0
    assert f"{module} -> minitorch.train.loop" in result.stdout


def unnamed_modules(root: Path) -> set[str]:
    """minitorch's top-level modules and packages that no layer of its layers contract names."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"]
                   if c["type"] == "layers" and c.get("containers") == ["minitorch"]]
    named = {name.strip("() ") for layer in contract["layers"]
             for name in re.split(r"[|:]", layer)}
    return {m.name for m in pkgutil.iter_modules([str(root / "minitorch")])} - named


def test_every_top_level_module_of_minitorch_is_in_a_layer():
    found = {m.name for m in pkgutil.iter_modules([str(ROOT / "minitorch")])}
    assert {"engine", "nn", "utils", "cuda", "backends", "cli"} <= found
    assert unnamed_modules(ROOT) == set()


def test_a_module_outside_the_layers_fails_the_lint(tree):
    """Negative control: a new top-level module (minitorch/planted.py) that no layer names."""
    new = tree / "minitorch" / "planted.py"
    new.write_text('"""A planted module."""\n\nimport numpy  # noqa: F401\n')
    try:
        assert unnamed_modules(tree) == {"planted"}
        result = lint(tree)
    finally:
        new.unlink()
    assert result.returncode != 0
    assert "minitorch.planted" in result.stdout


def test_layering_catches_a_cycle_between_siblings(tree):
    result = lint_with(tree, "minitorch.engine.registry", "from . import tensor")
    assert result.returncode != 0
    assert "No cycles are allowed in minitorch.engine" in result.stdout
    # the edge it suggests removing depends on the graph: either one closes the cycle
    assert ".registry -> .tensor" in result.stdout or ".tensor -> .registry" in result.stdout
