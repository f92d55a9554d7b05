"""Run `minitorch <args>` in this process with a planted fault (test code: the library has no
fault hooks; they are patched in here).

    python -m verification.kill_driver PLANT ARG -- train ...

Plants (ARG: a step-NNNNNNNN folder name, or a file path for hold_step_3):
  kill_before_copy   SIGKILL itself after the run's checkpoint, before its history copy ARG
  kill_mid_copy      SIGKILL after copy ARG's array file, before its manifest
  kill_mid_prune     SIGKILL while removing old copy ARG (its manifest gone, its arrays not)
  kill_before_finish SIGKILL after the final checkpoint, before the after-training sample
  kill_mid_finish    SIGKILL after the after-training sample, before the loss plot
  hold_step_3        step 3 writes ARG, then waits until ARG.release exists (signals arrive
                     inside a known step)
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

from minitorch import cli
from minitorch.train import history, loop


def _die() -> None:
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _plant(name: str, arg: str) -> None:
    copy, copyfileobj, rmtree = history.copy_latest, shutil.copyfileobj, shutil.rmtree
    current = {}

    def copy_latest(out, dst):
        if name == "kill_before_copy" and dst.name == arg:
            _die()
        current["dst"] = dst.name
        return copy(out, dst)

    def copy_file(src, f, *a):
        if name == "kill_mid_copy" and current.get("dst") == arg and \
                src.name.endswith("checkpoint.json"):
            _die()
        return copyfileobj(src, f, *a)

    def remove_tree(path, *a, **k):
        if name == "kill_mid_prune" and Path(path).name == arg:
            _die()
        return rmtree(path, *a, **k)

    history.copy_latest, shutil.copyfileobj, shutil.rmtree = copy_latest, copy_file, remove_tree
    if name == "kill_before_finish":
        loop.Trainer._finish = lambda self: _die()
    if name == "kill_mid_finish":
        loop.plot_metrics = lambda *a, **k: _die()
    if name == "hold_step_3":
        step, flag = loop.Trainer.train_step, Path(arg)

        def train_step(self):
            if self.step == 3 and not flag.exists():
                flag.write_text("in step 3\n")
                deadline = time.monotonic() + 600
                while not Path(f"{arg}.release").exists() and time.monotonic() < deadline:
                    time.sleep(0.02)
            return step(self)

        loop.Trainer.train_step = train_step


def main(argv: list[str]) -> int:
    _plant(argv[0], argv[1])
    assert argv[2] == "--"
    return cli.main(argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
