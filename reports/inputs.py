"""Where the report's inputs are, and what became of each one (found, missing, unreadable).

The report only reads: JSON artifacts (reports/artifacts/ or $MINITORCH_ARTIFACTS), training run
folders, JUnit files written by the main job, and asv's stored results.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from artifacts import ROOT, artifacts_dir


@dataclass
class Inputs:
    artifacts: Path
    run_dirs: list[Path]
    asv_results: Path
    seen: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (status, detail)
    job_started: float | None = None  # epoch seconds of the main job that wrote these, if any

    @classmethod
    def discover(cls, artifacts: Path | None = None, runs: list[Path] | None = None,
                 asv_results: Path | None = None) -> Inputs:
        art = Path(artifacts) if artifacts else artifacts_dir()
        if runs is None:  # the repo's runs/ too, unless the artifacts live elsewhere (tests)
            default = art.resolve() == (ROOT / "reports" / "artifacts").resolve()
            runs = find_runs(art / "runs") + (find_runs(ROOT / "runs") if default else [])
        inputs = cls(art, list(runs), Path(asv_results) if asv_results else find_asv_results())
        try:
            started = json.loads((art / "main_job.json").read_text()).get("started_epoch")
            inputs.job_started = float(started) if started is not None else None
        except (OSError, ValueError, AttributeError, TypeError):
            pass
        return inputs

    def json(self, name: str) -> Any | None:
        """The parsed artifact, or None; the outcome is remembered for the inputs table."""
        return self.json_file(self.artifacts / name, name)

    def json_file(self, path: Path, label: str | None = None) -> Any | None:
        label = label or str(path)
        if not path.exists():
            self.seen[label] = ("missing", relative(path))
            return None
        try:
            payload = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            self.seen[label] = ("unreadable", f"{relative(path)}: {e}")
            return None
        self._found(label, path)
        return payload

    def text(self, path: Path, label: str) -> str | None:
        try:
            content = path.read_text()
        except OSError:
            self.seen.setdefault(label, ("missing", relative(path)))
            return None
        self._found(label, path)
        return content

    def _found(self, label: str, path: Path) -> None:
        """Found; flagged when written before the main job began (its step failed or was
        skipped, or another tool wrote it), so an old result never passes for a new one."""
        old = self.job_started is not None and path.stat().st_mtime < self.job_started - 1
        self.seen[label] = ("older than the main job" if old else "found",
                            f"{relative(path)} · written {_mtime(path)}")

    def note(self, label: str, status: str, detail: str) -> None:
        """Another input's outcome; paths inside the repository in `detail` shown relative."""
        for root in {str(ROOT), str(ROOT.resolve())}:
            detail = detail.replace(root.rstrip("/") + "/", "")
        self.seen[label] = (status, detail)


def relative(path: Path | str, root: Path | None = None) -> str:
    """A path as the page shows it: relative to the repository when inside it (the report is
    shared; the building machine's absolute paths mean nothing to a reader)."""
    try:
        return str(Path(path).resolve().relative_to((root or ROOT).resolve()))
    except ValueError:
        return str(path)


def find_runs(root: Path) -> list[Path]:
    """Training run folders under root: any subfolder holding metrics.jsonl or config.json."""
    if not root.is_dir():
        return []
    markers = ("metrics.jsonl", "config.json")
    return sorted(p for p in root.iterdir()
                  if p.is_dir() and any((p / m).exists() for m in markers))


def find_asv_results() -> Path:
    """results_dir from asv.conf.json (asv allows // comments in it), else .asv/results."""
    conf = ROOT / "asv.conf.json"
    try:
        text = "\n".join(line for line in conf.read_text().splitlines()
                         if not line.strip().startswith("//"))
        return ROOT / json.loads(text).get("results_dir", ".asv/results")
    except (OSError, ValueError):
        return ROOT / ".asv" / "results"


def _mtime(path: Path) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(path.stat().st_mtime))
