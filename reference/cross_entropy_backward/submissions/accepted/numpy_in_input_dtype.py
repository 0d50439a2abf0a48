"""Correct: NumPy in the dtype of the input, with the row maximum subtracted and a one-hot by eye."""

import numpy as np
import torch


def cross_entropy_backward(logits, targets, ignore_index, label_smoothing):
    z = logits.numpy()
    t = targets.numpy()
    n, c = z.shape
    keep = t != ignore_index
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    log_p = z - np.log(s)
    onehot = np.eye(c, dtype=z.dtype)[np.where(keep, t, 0)]
    q = (1 - label_smoothing) * onehot + z.dtype.type(label_smoothing / c)
    w = keep.astype(z.dtype)[:, None] / z.dtype.type(keep.sum())
    loss = -(w * q * log_p).sum()
    grad = w * (e / s - q)
    return torch.tensor(loss, dtype=logits.dtype), torch.from_numpy(np.ascontiguousarray(grad, dtype=z.dtype))
