"""Optimizers (SGD, Adam, AdamW), gradient clipping and learning-rate schedules."""

from .adam import Adam, AdamW
from .clip import clip_grad_norm_
from .optimizer import Optimizer
from .schedule import LRScheduler, constant, warmup_cosine
from .sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "LRScheduler", "Optimizer", "clip_grad_norm_", "constant",
           "warmup_cosine"]
