"""Cross-entropy forward and backward: an independent oracle, written another way than reference.py:
torch.nn.functional.cross_entropy itself (what the contract names), and its gradient by autograd,
in float64. `verify` compares the reference against it."""

import torch
from torch import Tensor


def oracle(logits: Tensor, targets: Tensor, ignore_index: int, label_smoothing: float) -> tuple[Tensor, Tensor]:
    with torch.enable_grad():
        leaf = logits.detach().to(torch.float64).requires_grad_(True)
        loss = torch.nn.functional.cross_entropy(leaf, targets, ignore_index=ignore_index, label_smoothing=label_smoothing, reduction="mean")
        (grad,) = torch.autograd.grad(loss, leaf)
    return loss.detach(), grad
