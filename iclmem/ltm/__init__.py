"""The reference tabular in-context model (LTM): architecture, prior, pretraining, interface."""

from .encoding import TableEncoder, subsample_features
from .interface import LTM, ICLTask, LTMInputError, Predictions
from .model import MAX_CLASSES, LTMConfig, TabularICLTransformer
from .reference import CheckpointError, ReferenceLTM, load_checkpoint, load_reference

__all__ = [
    "LTM",
    "ICLTask",
    "LTMInputError",
    "Predictions",
    "LTMConfig",
    "TabularICLTransformer",
    "MAX_CLASSES",
    "TableEncoder",
    "subsample_features",
    "ReferenceLTM",
    "load_reference",
    "load_checkpoint",
    "CheckpointError",
]
