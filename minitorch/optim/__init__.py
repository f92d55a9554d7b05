"""Optimizers (SGD, Adam, AdamW), gradient clipping and learning-rate schedules."""

from .adam import Adam, AdamW
from .clip import clip_grad_norm_
from .optimizer import Optimizer, check_hyper
from .schedule import SCHEDULES, LRScheduler, constant, warmup_cosine
from .sgd import SGD

__all__ = ["SCHEDULES", "SGD", "Adam", "AdamW", "LRScheduler", "Optimizer", "check_hyper",
           "clip_grad_norm_", "constant", "warmup_cosine"]
