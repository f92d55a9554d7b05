"""Where the report's inputs are, and what became of each one (found, missing, unreadable).

The report only reads: JSON artifacts (reports/artifacts/ or $MINITORCH_ARTIFACTS), training run
folders (the main job's, under artifacts/runs/; others only when asked), JUnit files written by the
main job, and asv's stored results.
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
    run_dirs: list[Path]  # the report's runs: the main job's (artifacts/runs/*), or --runs
    asv_results: Path
    other_runs: list[Path] = field(default_factory=list)  # asked for (--include-runs), marked
    seen: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (status, detail)
    job_started: float | None = None  # epoch seconds of the main job that wrote these, if any

    @classmethod
    def discover(cls, artifacts: Path | None = None, runs: list[Path] | None = None,
                 asv_results: Path | None = None,
                 include_runs: list[Path] | None = None) -> Inputs:
        """runs: the run folders to report (default: the ones the main job trained, under
        artifacts/runs/). include_runs: run folders or folders of runs to show as well, every
        subfolder of the latter (a scratch run of `minitorch train`, even a broken one)."""
        art = Path(artifacts) if artifacts else artifacts_dir()
        if runs is None:  # never the repository's runs/: a user's scratch runs are not results
            runs = find_runs(art / "runs")
        chosen = {r.resolve() for r in runs}
        others = [r for r in expand_runs(include_runs or [], every=True)
                  if r.resolve() not in chosen]
        inputs = cls(art, list(runs), Path(asv_results) if asv_results else find_asv_results(),
                     other_runs=others)
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


RUN_FILES = ("metrics.jsonl", "config.json", "checkpoint.json")  # what the trainer writes
LOCK = ".lock"  # the trainer's lock: written first, so a run that wrote nothing else has it


def is_run(path: Path) -> bool:
    return any((path / m).exists() for m in (*RUN_FILES, LOCK))


def find_runs(root: Path) -> list[Path]:
    """Training run folders under root: any subfolder holding a file the trainer writes."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and is_run(p))


def expand_runs(paths: list[Path], every: bool = False) -> list[Path]:
    """Each path that is a run folder, else its run subfolders (with every=True, all of its
    subfolders: an empty or half-written one is shown as broken rather than left out)."""
    out: list[Path] = []
    for path in map(Path, paths):
        subs = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")
                      ) if path.is_dir() else []
        if is_run(path) or (every and not subs):
            out.append(path)
        else:
            out += subs if every else find_runs(path)
    return list(dict.fromkeys(out))


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
