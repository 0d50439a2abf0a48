"""Forbidden: the fused AdamW kernel (torch._fused_adamw_), reached through a private name."""

import torch


class AdamW:
    def __init__(self, params, lr, betas, eps, weight_decay):
        self.params, self.hyper = params, (lr, betas, eps, weight_decay)
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]
        self.t = []

    def step(self, grads):
        lr, (b1, b2), eps, wd = self.hyper
        self.t.append(1)
        steps = [torch.tensor(float(len(self.t))) for _ in self.params]
        torch._fused_adamw_(self.params, list(grads), self.m, self.v, [], steps, lr=lr, beta1=b1, beta2=b2, weight_decay=wd, eps=eps, amsgrad=False, maximize=False)
