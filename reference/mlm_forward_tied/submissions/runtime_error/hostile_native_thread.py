"""Hostile: starts a thread with the C library's pthread_create (through ctypes, found in
sys.modules), past the guard's refusal of Python's thread start, and runs torch's Python
decomposition of softmax there, where neither the guard's modes nor its profile function watch.
The kernel refuses the new thread, so the call fails: a runtime error, and nothing computed
unwatched."""

import math
import typing

import torch

sys = typing.sys
T = [torch][0]
softmax_decomposition = T._decomp.decomposition_table[T.ops.aten._softmax.default]
ctypes = sys.modules["ctypes"]
libc = ctypes.CDLL(None)
THREAD_MAIN = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)


def softmax(scores):
    box = []

    def job(_):
        box.append(softmax_decomposition(scores, -1, False))
        return None

    thread, entry = ctypes.c_ulong(), THREAD_MAIN(job)
    error = libc.pthread_create(ctypes.byref(thread), None, entry, None)
    if error:
        raise RuntimeError(f"pthread_create failed with error {error}")
    libc.pthread_join(thread, None)
    return box[0]


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    d_head = d // num_heads
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        h = layer_norm(x)
        q, k, v = ((h @ w).view(n, t, num_heads, d_head).transpose(1, 2) for w in (w_q, w_k, w_v))
        weights = softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head))
        x = x + (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
