"""Optimizers (SGD, Adam, AdamW, RMSprop, Adagrad), gradient clipping, learning-rate schedules
(schedule.py: the Trainer's LRScheduler) and torch's schedulers (the lr_scheduler submodule,
whose base class lr_scheduler.LRScheduler is not this package's LRScheduler)."""

from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .clip import clip_grad_norm_
from .optimizer import Optimizer, check_hyper
from .rmsprop import RMSprop
from .schedule import SCHEDULES, LRScheduler, constant, warmup_cosine
from .sgd import SGD

__all__ = ["SCHEDULES", "SGD", "Adagrad", "Adam", "AdamW", "LRScheduler", "Optimizer", "RMSprop",
           "check_hyper", "clip_grad_norm_", "constant", "lr_scheduler", "warmup_cosine"]
