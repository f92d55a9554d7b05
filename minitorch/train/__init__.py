"""Training: TrainConfig and overrides, the Trainer loop, and atomic no-pickle checkpoints."""

from ..io import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint
from .config import ConfigError, TrainConfig, apply_overrides, load_recipe, parse_overrides, resolve
from .loop import Trainer, build_optimizer, read_metrics

__all__ = ["Checkpoint", "CheckpointError", "ConfigError", "TrainConfig", "Trainer",
           "apply_overrides", "build_optimizer", "load_checkpoint", "load_recipe",
           "parse_overrides", "read_metrics", "resolve", "save_checkpoint"]
