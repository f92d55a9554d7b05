"""Run `minitorch <args>` as one MPI rank (or alone), optionally with a planted fault (test code).

    mpiexec -n 2 python -m verification.mpi_driver [--plant NAME] train ...

The plants break data-parallel training the ways a real bug would, so the suite can show that
its parity and drift checks catch them. The library has no fault hooks; they are patched in here.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from minitorch import cli
from minitorch.distributed import MPIWorld
from minitorch.train.config import ConfigError
from minitorch.train.loop import Trainer


def _no_allreduce():
    """Each rank steps on its own rows' gradients: the replicas drift apart."""
    MPIWorld.average_step = lambda self, params, loss, share: loss


def _unweighted_eval():
    """Evaluation as the plain mean of each rank's mean (ranks hold unequal batch counts)."""

    def mean(self, total, count):
        buf = np.array([total / count, 1.0])
        self.comm.Allreduce(self.MPI.IN_PLACE, buf, op=self.MPI.SUM)
        return float(buf[0] / buf[1])

    MPIWorld.mean = mean


def _summed_grads():
    """Gradients and loss summed over ranks instead of averaged."""
    average = MPIWorld.average_step
    MPIWorld.average_step = lambda self, params, loss, share: average(self, params, loss, 1.0)


def _rank1_fails_alone():
    """Rank 1 alone raises a user error at step 3, outside any agreed phase."""
    step = Trainer.train_step

    def train_step(self):
        if self.dist.rank == 1 and self.step == 3:
            raise ConfigError("planted: rank 1 cannot read its batch")
        return step(self)

    Trainer.train_step = train_step


def _hold_at_step(n: int):
    """Every rank waits before step n + 1 (step n's checkpoint written) for up to 10 minutes, then
    fails: a trainer killed meanwhile dies at a known step, however fast or busy the machine."""
    step = Trainer.train_step

    def train_step(self):
        for _ in range(600):
            if self.step != n:
                return step(self)
            time.sleep(1)
        raise SystemExit(f"planted hold at step {n}: nothing killed it within 10 minutes")

    Trainer.train_step = train_step


PLANTS = {"no_allreduce": _no_allreduce, "unweighted_eval": _unweighted_eval,
          "summed_grads": _summed_grads, "rank1_fails_alone": _rank1_fails_alone,
          "hold_at_step_5": lambda: _hold_at_step(5), "hold_at_step_8": lambda: _hold_at_step(8)}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--plant"]:
        PLANTS[argv[1]]()
        argv = argv[2:]
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
