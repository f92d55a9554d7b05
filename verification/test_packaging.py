"""The distribution as a user installs it: its own name (PyPI's "minitorch" is another project,
whose only package is named `torch`), the MIT licence in its metadata, `minitorch` as its only
top-level package with the data files it reads, and a build that leaves the source tree as it
was (no build/ or *.egg-info)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_distribution_is_named_apart_from_pypis_minitorch():
    assert PROJECT["name"] == "minitorch-numpy"
    dist = metadata.distribution(PROJECT["name"])  # what make venv installed
    assert dist.metadata["License"] == "MIT"
    assert "License :: OSI Approved :: MIT License" in dist.metadata.get_all("Classifier")
    assert "MIT License" in (ROOT / "LICENSE").read_text().splitlines()[0]
    readme = (ROOT / "README.md").read_text()
    assert f"pip install {PROJECT['name']}" not in readme  # it is not on PyPI: install the clone
    assert "pip install ." in readme and "LICENSE" in readme


@pytest.mark.slow
def test_the_wheel_holds_minitorch_alone_and_the_build_leaves_no_trace(tmp_path):
    src = tmp_path / "src"
    for name in subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                               check=True).stdout.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_bytes((ROOT / name).read_bytes())
    for name in ("LICENSE", "pyproject.toml"):  # as they are now, committed or not
        (src / name).write_bytes((ROOT / name).read_bytes())
    before = sorted(p.relative_to(src) for p in src.rglob("*"))
    # hatchling is in the lock: no build environment to download
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                           "--no-build-isolation", "-w", str(tmp_path / "dist"), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p.relative_to(src) for p in src.rglob("*")) == before
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert wheel.name.startswith("minitorch_numpy-")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"minitorch", wheel.name.split("-py3")[0]
                                                 + ".dist-info"}
    assert {"minitorch/data/default_corpus.txt", "minitorch/recipes/seed.json"} <= set(names)
    meta = Parser().parsestr(zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/METADATA"))).decode())
    assert (meta["Name"], meta["License"]) == ("minitorch-numpy", "MIT")
    assert any(n.endswith("licenses/LICENSE") for n in names)
