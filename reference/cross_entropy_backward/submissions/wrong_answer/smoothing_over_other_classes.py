"""Wrong: label smoothing spread over the C - 1 other classes (the target gets exactly 1 - e)."""

import torch


def cross_entropy_backward(logits, targets, ignore_index, label_smoothing):
    n, c = logits.shape
    shifted = logits - logits.amax(dim=1, keepdim=True)
    e = shifted.exp()
    s = e.sum(dim=1, keepdim=True)
    log_p = shifted - s.log()
    keep = targets != ignore_index
    onehot = torch.zeros_like(logits).scatter(1, torch.where(keep, targets, 0)[:, None], 1.0)
    q = (1 - label_smoothing) * onehot + label_smoothing / (c - 1) * (1 - onehot)
    w = keep.to(logits.dtype)[:, None] / keep.sum()
    return -(w * q * log_p).sum(), w * (e / s - q)
