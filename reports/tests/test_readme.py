"""The README as a newcomer reads it: its Python block runs as written in a fresh interpreter,
the parameter count it quotes is the one printed, and the make targets it names exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def python_blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README, flags=re.S | re.M)


def test_readme_python_block_runs_as_written(tmp_path):
    blocks = python_blocks()
    assert len(blocks) == 1, "the README has one Python example"
    script = tmp_path / "readme_example.py"
    script.write_text(blocks[0])
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    count = re.search(r"# ([\d,]+) parameters", blocks[0])
    assert count and done.stdout.startswith(f"{count.group(1)} parameters, loss "), done.stdout


def test_readme_make_targets_exist():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, flags=re.M))
    named = set(re.findall(r"`make ([\w-]+)", README))
    assert named and named <= targets, named - targets


SYSTEM = {"usr", "bin", "dev", "proc", "sys", "etc", "tmp", "opt", "var", "lib", "path"}
ABSOLUTE = re.compile(r"(?<![\w.:/~{}<>-])/([A-Za-z_][\w.-]*)/")  # /first/... , not in a URL
PARENT = re.compile(r"(?<![\w.])\.\./[\w-]")  # ../something: above the repository
DOC = re.compile(r"\b([\w-]+\.md)\b")


def outside_references(line: str, names: set[str]) -> list[str]:
    """What a line names outside the repository: an absolute path that is not a system one
    (/usr, /proc, ... or the /path/to placeholder), a path above the repository, or a .md
    document no file of the repository is called."""
    found = [m.group(0) for m in ABSOLUTE.finditer(line) if m.group(1) not in SYSTEM]
    return found + PARENT.findall(line) + [d for d in DOC.findall(line) if d not in names]


def test_outside_reference_check_catches_each_kind():
    names = {"README.md"}
    for line in ["see /home/someone/input.txt", "cp ../sibling/file .", "as OTHER.md says"]:
        assert outside_references(line, names), line
    for line in ["see README.md", "reads /proc/stat", "PYTHON=/path/to/python3.11",
                 "https://download.pytorch.org/whl/cpu", "<run>/checkpoints/best/"]:
        assert not outside_references(line, names), line


def test_docs_library_and_report_name_no_path_outside_the_repository():
    """The README, every .md, the Makefile, CI, the library and the report stand alone: no
    machine path, no document that is not in the clone."""
    files = [ROOT / "Makefile", ROOT / ".ci" / "run", *sorted(ROOT.rglob("*.md")),
             *sorted(p for d in ("minitorch", "reports") for p in (ROOT / d).rglob("*")
                     if p.suffix in (".py", ".j2"))]
    files = [p for p in files if p != Path(__file__).resolve() and not {
        ".venv", ".asv", "out", "artifacts", ".pytest_cache", ".hypothesis"} & set(
            p.relative_to(ROOT).parts)]  # this file holds the check's own examples
    names = {p.name for p in ROOT.rglob("*.md")}
    hits = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in files
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if outside_references(line, names)]
    assert not hits, "\n".join(hits)
