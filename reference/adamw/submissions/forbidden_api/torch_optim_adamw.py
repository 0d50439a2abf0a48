"""Forbidden: torch.optim.AdamW does every step right, but the optimizer is to be written by hand."""

import torch


class AdamW:
    def __init__(self, params, lr, betas, eps, weight_decay):
        self.params = params
        self.inner = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

    def step(self, grads):
        for p, g in zip(self.params, grads):
            p.grad = g.clone()
        self.inner.step()
