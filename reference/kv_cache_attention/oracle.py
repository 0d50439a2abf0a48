"""One decoding step with a key-value cache: an independent oracle, written another way than the
reference: the full attention of torch.nn.functional.scaled_dot_product_attention over the
concatenated cache, each head built by explicit column slices, in float64. `verify` compares the
reference against it."""

import torch
from torch import Tensor


def oracle(x: Tensor, w_qkv: Tensor, w_o: Tensor, k_cache: Tensor, v_cache: Tensor, num_heads: int) -> tuple[Tensor, Tensor, Tensor]:
    wide = torch.float64
    x, w_qkv, w_o, k_cache, v_cache = (t.to(wide) for t in (x, w_qkv, w_o, k_cache, v_cache))
    b, d_model = x.shape
    d = d_model // num_heads
    qkv = x @ w_qkv
    q = torch.stack([qkv[:, h * d : (h + 1) * d] for h in range(num_heads)], dim=1)[:, :, None, :]  # (B, H, 1, d)
    k = torch.stack([qkv[:, d_model + h * d : d_model + (h + 1) * d] for h in range(num_heads)], dim=1)[:, :, None, :]
    v = torch.stack([qkv[:, 2 * d_model + h * d : 2 * d_model + (h + 1) * d] for h in range(num_heads)], dim=1)[:, :, None, :]
    keys, values = torch.cat([k_cache, k], dim=2), torch.cat([v_cache, v], dim=2)
    heads = torch.nn.functional.scaled_dot_product_attention(q, keys, values)  # (B, H, 1, d)
    y = torch.cat([heads[:, h, 0, :] for h in range(num_heads)], dim=-1) @ w_o
    return y, keys, values
