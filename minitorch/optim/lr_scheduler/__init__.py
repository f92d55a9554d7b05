"""torch.optim.lr_scheduler for minitorch optimizers, step by step as torch 2.13: each step() sets
every group's lr, most schedulers from the group's current lr (so they chain, as torch's do), with
torch's initial step at construction, last_epoch, base_lrs, get_last_lr and state_dict.

Arguments are checked when a scheduler is built and a schedule never writes a non-finite lr.
This module's LRScheduler is torch's base class (also minitorch.optim.LRScheduler); the
Trainer's schedule (schedule.ScheduleLR) is one of its subclasses. No torch import.
"""

from .base import LRScheduler
from .one_cycle import OneCycleLR
from .plateau import ReduceLROnPlateau
from .schedules import (
    ConstantLR,
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    SequentialLR,
    StepLR,
)

__all__ = ["ConstantLR", "CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR",
           "LinearLR", "MultiStepLR", "MultiplicativeLR", "OneCycleLR", "ReduceLROnPlateau",
           "SequentialLR", "StepLR"]
