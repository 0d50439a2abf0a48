"""One decoding step of multi-head attention with a key-value cache: the reference, differentiable,
in the dtype of its inputs (the grader calls it with float64 copies).

Shapes: B sequences, D = d_model, H heads of width d = D / H, T cached positions (T = 0 at the first
token). The new token's q, k, v come from x @ w_qkv, split in three along the last axis, each viewed
head-major as (B, H, d). The new key and value are appended to the caches (the outputs grow to
T + 1 positions); each head's query attends to every cached key and its own, scaled by 1/sqrt(d),
with a softmax over the T + 1 keys (the row maximum subtracted first); the heads' outputs are
concatenated head-major back to (B, D), then multiplied by w_o.
"""

import math

import torch
from torch import Tensor


def attention_decode_step(x: Tensor, w_qkv: Tensor, w_o: Tensor, k_cache: Tensor, v_cache: Tensor, num_heads: int) -> tuple[Tensor, Tensor, Tensor]:
    batch, width = x.shape
    head = width // num_heads
    q, k, v = (x @ w_qkv).split(width, dim=-1)
    q = q.reshape(batch, num_heads, 1, head)
    k_cache_new = torch.cat([k_cache, k.reshape(batch, num_heads, 1, head)], dim=2)  # (B, H, T + 1, d)
    v_cache_new = torch.cat([v_cache, v.reshape(batch, num_heads, 1, head)], dim=2)
    scores = q @ k_cache_new.transpose(-2, -1) / math.sqrt(head)  # (B, H, 1, T + 1)
    weights = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    weights = weights / weights.sum(dim=-1, keepdim=True)
    heads = weights @ v_cache_new  # (B, H, 1, d)
    y = heads.reshape(batch, width) @ w_o
    return y, k_cache_new, v_cache_new
