"""AdamW: an independent oracle, torch.optim.AdamW itself (what the contract names), on the very
tensors given, in their dtype (float64 when verify compares it with the reference)."""

import torch
from torch import Tensor


class oracle:  # noqa: N801 - the name verify looks up
    def __init__(self, params: list[Tensor], lr: float, betas: tuple[float, float], eps: float, weight_decay: float) -> None:
        self.params = params
        self.optimizer = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=False, maximize=False, foreach=False)

    def step(self, grads: list[Tensor]) -> None:
        for p, g in zip(self.params, grads, strict=True):
            p.grad = g.clone()
        self.optimizer.step()
