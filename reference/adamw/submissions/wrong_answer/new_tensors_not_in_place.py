"""Wrong: the right numbers, but in new tensors kept by the optimizer: the tensors passed to it never change."""

import torch


class AdamW:
    def __init__(self, params, lr, betas, eps, weight_decay):
        self.params = [p.clone() for p in params]
        self.lr, self.betas, self.eps, self.wd = lr, betas, eps, weight_decay
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads):
        self.t += 1
        b1, b2 = self.betas
        for i, g in enumerate(grads):
            p = self.params[i] * (1 - self.lr * self.wd)
            self.m[i] = b1 * self.m[i] + (1 - b1) * g
            self.v[i] = b2 * self.v[i] + (1 - b2) * g * g
            self.params[i] = p - self.lr * (self.m[i] / (1 - b1**self.t)) / ((self.v[i] / (1 - b2**self.t)).sqrt() + self.eps)
