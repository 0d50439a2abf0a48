"""Hostile: while being imported, calls the built-in softmax and catches the refusal, then ends the
import with an exception whose str() raises, hoping the runner fails while it describes the
exception and ends before it tells the forbidden use (a runtime error instead)."""

import math

import torch


class Unprintable(BaseException):
    def __str__(self):
        raise Unprintable()


try:
    torch.softmax(torch.ones(3), dim=0)
except Exception:
    pass


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


raise Unprintable()
