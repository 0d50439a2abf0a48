"""Forbidden: torch.rms_norm computes the very normalisation the challenge asks to write."""

import torch


def template_entry_point(x, weight, eps):
    return torch.rms_norm(x, (x.shape[-1],), weight, eps)
