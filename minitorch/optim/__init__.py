"""Optimizers (SGD, Adam, AdamW, RMSprop, Adagrad), gradient clipping, torch's schedulers (the
lr_scheduler submodule; LRScheduler here is its base class) and the Trainer's schedules
(schedule.py: functions of the step, applied by ScheduleLR, one of torch's schedulers)."""

from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .clip import clip_grad_norm_
from .lr_scheduler import LRScheduler
from .optimizer import Optimizer, check_hyper
from .rmsprop import RMSprop
from .schedule import SCHEDULES, ScheduleLR, constant, warmup_cosine
from .sgd import SGD

__all__ = ["SCHEDULES", "SGD", "Adagrad", "Adam", "AdamW", "LRScheduler", "Optimizer", "RMSprop",
           "ScheduleLR", "check_hyper", "clip_grad_norm_", "constant", "lr_scheduler",
           "warmup_cosine"]
