"""Training: TrainConfig and overrides, the Trainer loop (divergence stops it), run-folder
ownership (one trainer per folder, no silent overwrite); checkpoints live in minitorch.io."""

from ..io import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint
from .config import ConfigError, TrainConfig, apply_overrides, load_recipe, parse_overrides, resolve
from .loop import Trainer, TrainingDiverged, build_optimizer, read_metrics
from .run_dir import RunBusyError, hold_run

__all__ = ["Checkpoint", "CheckpointError", "ConfigError", "RunBusyError", "TrainConfig",
           "Trainer", "TrainingDiverged", "apply_overrides", "build_optimizer", "hold_run",
           "load_checkpoint", "load_recipe", "parse_overrides", "read_metrics", "resolve",
           "save_checkpoint"]
