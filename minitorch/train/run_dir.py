"""Who owns a run folder: one trainer at a time (an exclusive OS lock held for the whole run),
and no fresh run over an existing one unless asked (--resume continues it, --overwrite replaces it).

The lock is fcntl.flock on <run>/.lock, so the OS releases it when its holder exits, however it
exits (kill -9 included): a stale lock file is never an obstacle. The holder writes its PID
into the file so a second trainer can name it. A refused run leaves the folder as it found it
(see hold_run); a locker checks that the file it locked is still the folder's .lock, so that
removal never lets two processes hold two different inodes. A checkpoint resumed here must be
the folder's own run (its config.json), not one copied in from another run folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..io import CheckpointError
from ..io.checkpoint import MANIFEST, config_diff
from .config import ConfigError

LOCK = ".lock"
RUN_FILES = ("checkpoint.json", "metrics.jsonl", "config.json")  # any of these: a run lives here
OWN_FILES = ("checkpoint.json", "metrics.jsonl", "config.json", "samples.json", "loss.png")
OWN_DIRS = ("checkpoints",)  # the kept checkpoint history and best/ (see loop.Trainer)
SCRATCH = (LOCK, "tokens-*.uint*", ".tokens-*.tmp")  # made before the run writes its own files

_HELD: dict[str, list] = {}  # resolved run folder -> [open lock file, nesting depth]


class RunBusyError(ConfigError):
    """Another process is training into this run folder."""


def _usable_dir(out: Path) -> None:
    """Create `out` (and parents) or raise ConfigError saying why it cannot be a run folder.
    mkdir comes first, the checks after: a refused run on the same folder may remove it at any
    moment (then it is made again)."""
    for _ in range(10):
        try:
            out.mkdir(parents=True, exist_ok=True)
            break
        except FileExistsError:  # a file, or a folder removed again between mkdir's checks
            if out.exists() and not out.is_dir():
                raise ConfigError(f"--out {out} is a file, not a folder") from None
        except OSError as e:
            raise ConfigError(f"cannot create the run folder --out {out}: "
                              f"{e.strerror or e}") from None
    else:
        raise ConfigError(f"cannot create the run folder --out {out}: it keeps vanishing")
    if not os.access(out, os.W_OK | os.X_OK) and out.is_dir():
        raise ConfigError(f"the run folder --out {out} is not writable")


def _missing_dirs(out: Path) -> list[Path]:
    """out and its ancestors that do not exist yet, deepest first (what mkdir would create)."""
    missing = []
    for d in (out, *out.parents):
        if d.exists() or d == d.parent:
            break
        missing.append(d)
    return missing


def _open_lock(path: Path):
    """(open file, whether this open created it): O_EXCL tells a lock file we made from one
    that was there (another process's, or one left by an earlier run)."""
    try:
        fd, made = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666), True
    except FileExistsError:
        fd, made = os.open(path, os.O_RDWR), False
    return os.fdopen(fd, "r+"), made


def _lock(out: Path):
    """(the open, exclusively locked out/.lock, whether we created it); RunBusyError naming
    the holder if another process holds it."""
    for _ in range(10):  # the file was removed by a refused holder after we opened it: again
        try:
            f, made = _open_lock(out / LOCK)
        except FileNotFoundError:  # a refused run removed the folder (or the file): again
            _usable_dir(out)
            continue
        except OSError as e:
            raise ConfigError(f"cannot open the lock file in --out {out}: "
                              f"{e.strerror or e}") from None
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "unknown"
            f.close()
            raise RunBusyError(f"{out} is in use by another trainer (PID {holder}); wait for it "
                               "to finish or choose another --out") from None
        except OSError as e:
            f.close()
            raise ConfigError(f"cannot lock the run folder --out {out}: "
                              f"{e.strerror or e}") from None
        with contextlib.suppress(OSError):
            if os.stat(out / LOCK).st_ino == os.fstat(f.fileno()).st_ino:
                return f, made
        f.close()
        _usable_dir(out)
    raise ConfigError(f"cannot lock the run folder --out {out}: its lock file keeps vanishing")


def _undo(out: Path, created: list[Path], before: set[str]) -> None:
    """Remove what a refused run made in out: the entries it added if all are SCRATCH (none is
    a run file or checkpoint), then the folders it created, if empty. Never anything else."""
    added = [p for p in out.iterdir() if p.name not in before] if out.is_dir() else []
    if any(not any(p.match(g) for g in SCRATCH) or p.is_dir() for p in added):
        return  # the run wrote something of its own: keep everything
    for p in sorted(added, key=lambda p: p.name == LOCK):  # the lock last: it is still held
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
    _remove_empty(created)


def _remove_empty(folders: list[Path]) -> None:
    """rmdir each folder (deepest first) while it is empty: never what someone else put there."""
    for d in folders:
        try:
            d.rmdir()
        except OSError:
            break


@contextlib.contextmanager
def hold_run(out_dir: str | Path) -> Iterator[Path]:
    """Hold the run folder's exclusive lock for the `with` block (re-entrant in one process).

    Raises RunBusyError at once, naming the holder's PID, if another process holds it; a lock
    left by a dead process is free. Raises ConfigError if the folder cannot be created or used.
    If the block raises before the run wrote a file of its own (a refused run), the outermost
    hold removes the lock file and token files it added and the folders it created.
    """
    out = Path(out_dir)
    created = _missing_dirs(out)
    key = str(out.resolve())
    if key in _HELD:
        _HELD[key][1] += 1
        try:
            yield out
        finally:
            _HELD[key][1] -= 1
        return
    try:
        _usable_dir(out)
        f, made = _lock(out)
        # what the folder held, read holding the lock: files another process made before we
        # held it are not ours to remove; the lock file is, if our open created it
        before = {p.name for p in out.iterdir()} - ({LOCK} if made else set())
    except ConfigError:
        _remove_empty(created)  # busy or unusable: remove only the folders we made, if empty
        raise
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    _HELD[key] = [f, 1]
    try:
        yield out
    except BaseException:
        with contextlib.suppress(OSError):  # never in place of the refusal being raised
            _undo(out, created, before)  # while the lock is still held
        raise
    finally:
        del _HELD[key]
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
        f.close()


def describe_run(out_dir: str | Path) -> str | None:
    """'step 200 of 4000, saved 2026-11-30 11:52' for a folder holding a run, else None."""
    out = Path(out_dir)
    present = [out / name for name in RUN_FILES if (out / name).is_file()]
    if not present:
        return None
    step, iters = "?", "?"
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        manifest = json.loads((out / "checkpoint.json").read_text())
        step = int(manifest["step"])
        iters = manifest["config"].get("iters", "?")
    newest = max(p.stat().st_mtime for p in present)
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(newest))
    if step == "?":
        return f"no checkpoint yet, last written {when}"
    return f"step {step} of {iters}, saved {when}"


def check_fresh(out_dir: str | Path, overwrite: bool) -> None:
    """Raise ConfigError if `out_dir` holds a run and overwrite is False (the error names the run
    and both ways on); with overwrite, the old run's files are removed."""
    out = Path(out_dir)
    run = describe_run(out)
    if run is None:
        return
    if not overwrite:
        resume = "" if run.startswith("no checkpoint") else "continue it with --resume or "
        raise ConfigError(f"{out} already holds a run ({run}); {resume}replace it with "
                          "--overwrite")
    # the old run's files, its array files and the temp files a killed write left behind
    for path in [*(out / n for n in OWN_FILES), *out.glob("ckpt-*.safetensors"),
                 *out.glob(".*.tmp")]:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    for name in OWN_DIRS:
        shutil.rmtree(out / name, ignore_errors=True)


def check_own_checkpoint(out_dir: str | Path, saved: dict, may_differ: Iterable[str]) -> None:
    """CheckpointError if the checkpoint's run config (`saved`) is not the run this folder's
    config.json was written for when it started (keys in may_differ aside: those a resume may
    change, and keys only one of them has): a checkpoint.json copied in from another run
    folder. No config.json: no check."""
    out = Path(out_dir)
    path = out / "config.json"
    try:
        with open(path, "rb") as f:
            started = json.loads(f.read(32 << 20))["train"]  # a config: a few kB
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return  # a folder made by hand or by an older minitorch: nothing to compare with
    if not isinstance(started, dict):
        return
    # keys both have: a key a newer minitorch added is missing from an older run's config.json
    keys = (saved.keys() & started.keys()) - set(may_differ)
    d = config_diff({k: saved[k] for k in keys}, {k: started[k] for k in keys})
    if d:
        raise CheckpointError(f"checkpoint {out / MANIFEST} belongs to another run than {out}: "
                              f"it was saved by a run with {d[0]} where {path} (written when "
                              f"this folder's run started) has {d[1]}; resume the folder it "
                              "came from, or copy that whole folder")
