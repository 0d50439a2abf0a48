"""Honest: numpy counts and picks the masked positions, with the ndarray method .sum().

Refused today as forbidden_api: ndarray.sum (and .all(), seen the same way in-process) is C code that, on its
first call in the process, imports numpy._core._methods by name; a C-level import (PyImport_Import)
calls the __import__ of the builtins of the current Python frame, here the submission's: the
capability layer's restricted __import__, which refuses every module outside the allowed list.

Today: `python -m grader FILE --json` -> verdict forbidden_api, 'case public_tiny failed (0 of 46 cases passed): used the import of numpy._core._methods (line 36 of numpy_array_sum_method.py) (use the public API of the allowed modules and your own code: see the Rul'"""

import math

import numpy as np
import torch


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    n, t = input_ids.shape
    d = w_emb.shape[1]
    dh = d // num_heads
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_1, w_2 in blocks_weights:
        h = layer_norm(x)
        q, k, v = ((h @ w).view(n, t, num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
        s = q @ k.transpose(-2, -1) / math.sqrt(dh)
        e = torch.exp(s - s.amax(dim=-1, keepdim=True))
        x = x + ((e / e.sum(dim=-1, keepdim=True)) @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        u = layer_norm(x) @ w_1
        x = x + 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u**3))) @ w_2
    selected = mask_indicator.detach().numpy() > 0.5
    count = int(selected.sum())  # ndarray.sum: numpy C code imports numpy._core._methods lazily
    rows = torch.from_numpy(np.flatnonzero(selected).astype(np.int64))
    assert rows.shape[0] == count
    return x.reshape(n * t, d)[rows] @ w_emb.T
