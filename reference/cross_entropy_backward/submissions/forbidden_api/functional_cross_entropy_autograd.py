"""Forbidden: torch.nn.functional.cross_entropy and autograd give the right numbers, by the routes the challenge forbids."""

import torch


def cross_entropy_backward(logits, targets, ignore_index, label_smoothing):
    leaf = logits.detach().clone().requires_grad_(True)
    loss = torch.nn.functional.cross_entropy(leaf, targets, ignore_index=ignore_index, label_smoothing=label_smoothing)
    loss.backward()
    return loss.detach(), leaf.grad
