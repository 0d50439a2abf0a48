import torch


def scale_count(x, y, alpha, keep):
    z = alpha * x
    if keep:
        z = z + y
    return z, (x > 0).to(torch.int64).sum(-1)
