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


OUTSIDE = re.compile(r"\.\./shared|/work/|/root/|\b(TOOLING|STYLE|ANCHORS)\.md\b")


def test_docs_and_report_name_no_path_outside_the_repository():
    """The README, docs/, the Makefile, CI and the report stand alone: no machine path, no
    document that is not in the clone."""
    files = [ROOT / "README.md", ROOT / "Makefile", ROOT / ".ci" / "run",
             *sorted((ROOT / "docs").glob("*.md")),
             *sorted(p for p in (ROOT / "reports").rglob("*") if p.suffix in (".py", ".j2")
                     and p.name != "test_readme.py")]
    hits = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in files
            for i, line in enumerate(p.read_text().splitlines(), 1) if OUTSIDE.search(line)]
    assert not hits, "\n".join(hits)
