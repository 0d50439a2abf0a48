"""Your solution: implement attention_decode_step. See README.md in this folder for the full statement."""

import torch  # noqa: F401 - the tensor library you will need


def attention_decode_step(x, w_qkv, w_o, k_cache, v_cache, num_heads):
    """One decoding step: x (B, D) the new token of each sequence, w_qkv (D, 3D), w_o (D, D), the
    caches (B, H, T, d) with H = num_heads and d = D / H (T may be 0).

    Return (y, k_cache_new, v_cache_new): y (B, D) and the caches with the new token's key and value
    appended, (B, H, T + 1, d), all in the dtype of x and differentiable.
    """
    raise NotImplementedError("write attention_decode_step: see the statement, README.md next to this file")
