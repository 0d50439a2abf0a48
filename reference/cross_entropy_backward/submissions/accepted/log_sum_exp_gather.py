"""Correct: loss = log-sum-exp minus the smoothed targets' weighted logits, the target picked with gather."""

import torch


def cross_entropy_backward(logits, targets, ignore_index, label_smoothing):
    c = logits.shape[-1]
    m = logits.amax(-1, keepdim=True)
    e = (logits - m).exp()
    s = e.sum(-1, keepdim=True)
    lse = (m + s.log()).squeeze(-1)
    keep = targets.ne(ignore_index)
    idx = targets.masked_fill(~keep, 0).unsqueeze(-1)
    picked = logits.gather(-1, idx).squeeze(-1)
    per_row = lse - (1 - label_smoothing) * picked - label_smoothing * logits.mean(-1)
    n_kept = keep.sum()
    loss = per_row.masked_fill(~keep, 0).sum() / n_kept
    grad = e / s - label_smoothing / c
    grad = grad.scatter_add(-1, idx, torch.full_like(picked, -(1 - label_smoothing)).unsqueeze(-1))
    grad = grad * keep.unsqueeze(-1) / n_kept
    return loss, grad
