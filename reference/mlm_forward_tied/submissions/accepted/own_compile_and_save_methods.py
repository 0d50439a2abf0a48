"""Honest: a helper class with its own methods named compile (prepares the layers) and save (keeps an activation)."""

import math

import torch


class Plan:
    def __init__(self, blocks_weights, num_heads):
        self.blocks_weights = blocks_weights
        self.num_heads = num_heads
        self.layers = []
        self.saved = []

    def compile(self):
        """Split the stacked weights into one tuple per block (nothing to do with torch.compile)."""
        self.layers = [tuple(w.unbind(0)) for w in self.blocks_weights]
        return self

    def save(self, x):
        """Keep an activation, as a debugging aid would, and hand it back unchanged."""
        self.saved.append(x.shape)
        return x

    @staticmethod
    def norm(x):
        mean = x.mean(dim=-1, keepdim=True)
        var = (x - mean).pow(2).mean(dim=-1, keepdim=True)
        return (x - mean) * torch.rsqrt(var + 1e-5)

    def attention(self, h, w_q, w_k, w_v, w_o):
        n, t, d = h.shape
        dh = d // self.num_heads
        q = (h @ w_q).view(n, t, self.num_heads, dh).transpose(1, 2)
        k = (h @ w_k).view(n, t, self.num_heads, dh).transpose(1, 2)
        v = (h @ w_v).view(n, t, self.num_heads, dh).transpose(1, 2)
        s = q @ k.transpose(-2, -1) / math.sqrt(dh)
        p = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
        return (p @ v).transpose(1, 2).reshape(n, t, d) @ w_o

    def forward(self, x):
        for w_q, w_k, w_v, w_o, w_1, w_2 in self.layers:
            x = self.save(x + self.attention(self.norm(x), w_q, w_k, w_v, w_o))
            u = self.norm(x) @ w_1
            x = self.save(x + 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3))) @ w_2)
        return x


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    plan = Plan(blocks_weights, num_heads).compile()
    hidden = plan.forward(plan.save(w_emb[input_ids] + pos_embed))
    return hidden[mask_indicator > 0.5] @ w_emb.T
