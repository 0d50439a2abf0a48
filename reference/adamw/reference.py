"""AdamW by hand: the reference, a class stepped by the grader, in the dtype of its parameters (the
grader gives it float64 copies).

One step of torch.optim.AdamW (amsgrad=False, maximize=False), for each parameter p with gradient g,
at step t (1 for the first):

    p  <- p * (1 - lr * weight_decay)                  decoupled weight decay, before the update
    m  <- beta1 * m + (1 - beta1) * g                  first moment
    v  <- beta2 * v + (1 - beta2) * g * g              second moment
    p  <- p - lr * (m / (1 - beta1**t)) / (sqrt(v / (1 - beta2**t)) + eps)

Every parameter is updated in place: the very tensors passed to the constructor.
"""

import torch
from torch import Tensor


class AdamW:
    def __init__(self, params: list[Tensor], lr: float, betas: tuple[float, float], eps: float, weight_decay: float) -> None:
        self.params = params
        self.lr = lr
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.weight_decay = weight_decay
        self.first = [torch.zeros_like(p) for p in params]
        self.second = [torch.zeros_like(p) for p in params]
        self.steps = 0

    def step(self, grads: list[Tensor]) -> None:
        self.steps += 1
        first_correction = 1 - self.beta1**self.steps
        second_correction = 1 - self.beta2**self.steps
        for p, g, m, v in zip(self.params, grads, self.first, self.second, strict=True):
            p.mul_(1 - self.lr * self.weight_decay)
            m.mul_(self.beta1).add_(g * (1 - self.beta1))
            v.mul_(self.beta2).add_(g * g * (1 - self.beta2))
            p.sub_(self.lr * (m / first_correction) / ((v / second_correction).sqrt() + self.eps))
