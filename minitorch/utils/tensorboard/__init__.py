"""torch.utils.tensorboard's SummaryWriter (scalars, text, histograms, hparams), writing real
TensorBoard event files. A deliberate difference: it needs neither the tensorboard package nor
protobuf (torch's does); the records are encoded here with the standard library. Events are
buffered and written at flush()/close(), every max_queue events, when flush_secs have passed
at an add, and at exit (torch writes from a background thread)."""

from .writer import SummaryWriter

__all__ = ["SummaryWriter"]
