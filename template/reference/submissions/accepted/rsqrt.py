"""Correct: the reciprocal square root, the mean taken as a sum over D."""

import torch


def template_entry_point(x, weight, eps):
    d = x.shape[-1]
    return x * torch.rsqrt((x**2).sum(-1, keepdim=True) / d + eps) * weight
