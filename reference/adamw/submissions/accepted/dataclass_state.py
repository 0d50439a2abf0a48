"""Correct: a state object per parameter, new moment tensors each step, written back with copy_."""

from dataclasses import dataclass

import torch


@dataclass
class State:
    m: torch.Tensor
    v: torch.Tensor


class AdamW:
    def __init__(self, params, lr, betas, eps, weight_decay):
        self.params = list(params)
        self.lr = lr
        self.betas = betas
        self.eps = eps
        self.weight_decay = weight_decay
        self.state = [State(torch.zeros_like(p), torch.zeros_like(p)) for p in self.params]
        self.count = 0

    def step(self, grads):
        self.count += 1
        beta1, beta2 = self.betas
        for p, g, s in zip(self.params, grads, self.state):
            s.m = beta1 * s.m + (1 - beta1) * g
            s.v = beta2 * s.v + (1 - beta2) * g * g
            m_hat = s.m / (1 - beta1**self.count)
            v_hat = s.v / (1 - beta2**self.count)
            new = p * (1 - self.lr * self.weight_decay) - self.lr * m_hat / (torch.sqrt(v_hat) + self.eps)
            p.copy_(new)
