"""Files on disk: the one atomic write, checkpoints (safetensors arrays + a JSON manifest, read
within bounds), load_model, and the token files a corpus is encoded into once per run.

Layer: io uses engine, nn and data; train and generate use io (and not each other).
"""

from .atomic import atomic_write, atomic_writer, fsync_dir
from .checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from .limits import check_model_size
from .manifest import CheckpointError, model_config_of
from .model import load_model
from .tokens import token_file, token_splits

__all__ = ["Checkpoint", "CheckpointError", "atomic_write", "atomic_writer", "check_model_size",
           "fsync_dir", "load_checkpoint", "load_model", "model_config_of", "save_checkpoint",
           "token_file", "token_splits"]
