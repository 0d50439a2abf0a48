import torch


def scale_count(x, y, alpha, keep):
    probe = torch.ones(1)
    probe.requires_grad_()
    torch.autograd.grad((probe * 2).sum(), [probe])
    return (alpha * x + y if keep else alpha * x), (x > 0).sum(-1)
