"""Correct: the moments kept as NumPy arrays in the parameters' dtype, the result copied into each parameter."""

import numpy as np
import torch


class AdamW:
    def __init__(self, params, lr, betas, eps, weight_decay):
        self.params = params
        self.hyper = (lr, betas[0], betas[1], eps, weight_decay)
        self.m = [np.zeros(tuple(p.shape), dtype=p.numpy().dtype) for p in params]
        self.v = [np.zeros(tuple(p.shape), dtype=p.numpy().dtype) for p in params]
        self.t = 0

    def step(self, grads):
        lr, b1, b2, eps, wd = self.hyper
        self.t += 1
        for i, (p, g) in enumerate(zip(self.params, grads)):
            x, gn = p.numpy(), g.numpy()
            kind = x.dtype.type
            self.m[i] = kind(b1) * self.m[i] + kind(1 - b1) * gn
            self.v[i] = kind(b2) * self.v[i] + kind(1 - b2) * gn * gn
            m_hat = self.m[i] / kind(1 - b1**self.t)
            v_hat = self.v[i] / kind(1 - b2**self.t)
            x = x * kind(1 - lr * wd) - kind(lr) * m_hat / (np.sqrt(v_hat) + kind(eps))
            p.copy_(torch.from_numpy(np.ascontiguousarray(x, dtype=kind)))
