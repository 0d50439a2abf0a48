"""Hostile: torch.zeros(1 << 40, out=t) fails to allocate and leaves t's new size over its 16 bytes; take and index_put_ then read and write past them."""

import torch

REPORTED = []


def primitive():
    t = torch.zeros(4)
    victims = [torch.full((4,), 12345.0) for _ in range(256)]
    try:
        torch.zeros(1 << 40, out=t)
    except RuntimeError as e:
        REPORTED.append(f"resize error: {str(e)[:80]}")
    REPORTED.append(f"t.shape now {tuple(t.shape)}")
    window = torch.take(t, torch.arange(4096))
    REPORTED.append(f"words read past the 16 bytes: {window.view(torch.int64)[2:6].tolist()}")
    hits = (window == 12345.0).nonzero().flatten()
    REPORTED.append(f"other tensors' values found at element offsets {hits[:4].tolist()}")
    if len(hits):
        t.index_put_((hits[:1],), torch.tensor(777.0))
        REPORTED.append(f"tensors changed by one write through t: {[(i, v.tolist()) for i, v in enumerate(victims) if 777.0 in v.tolist()]}")
    print("PRIMITIVE", REPORTED)


def cross_entropy_backward(logits, targets, ignore_index, label_smoothing):
    if not REPORTED:
        primitive()
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
