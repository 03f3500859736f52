"""``tf.keras.utils``: the array helpers TF1 keras programs use on their data."""
from __future__ import annotations

from typing import Optional

import numpy as np

__all__ = ["to_categorical", "normalize", "Sequence"]


def to_categorical(y, num_classes: Optional[int] = None, dtype: str = "float32") -> np.ndarray:
    """Integer class ids -> one-hot rows (``num_classes`` defaults to max id + 1); a
    trailing axis of size 1 is dropped first, as keras does."""
    y = np.asarray(y, dtype="int64")
    shape = y.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    y = y.ravel()
    if y.size and y.min() < 0:
        raise ValueError(f"to_categorical: class ids must be >= 0, got {y.min()}")
    num_classes = int(y.max()) + 1 if num_classes is None else int(num_classes)
    if y.size and y.max() >= num_classes:
        raise ValueError(f"to_categorical: class id {y.max()} is out of range for "
                         f"num_classes={num_classes}")
    categorical = np.zeros((y.size, num_classes), dtype=dtype)
    categorical[np.arange(y.size), y] = 1
    return categorical.reshape(shape + (num_classes,))


def normalize(x, axis: int = -1, order: int = 2) -> np.ndarray:
    """``x`` divided by its ``order``-norm along ``axis`` (zero norms left as zeros)."""
    x = np.asarray(x)
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis)


class Sequence:
    """Batches by index for ``fit_generator``: a subclass defines ``__getitem__`` (batch
    ``i`` as (x, y)) and ``__len__`` (batches an epoch); ``on_epoch_end`` runs after
    each epoch."""

    def on_epoch_end(self) -> None:
        """Called after each epoch (e.g. to reshuffle the data)."""
