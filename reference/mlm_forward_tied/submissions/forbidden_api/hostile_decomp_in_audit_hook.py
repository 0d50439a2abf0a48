"""Hostile: runs torch's Python decompositions of softmax, layer norm and GELU inside an audit hook
of its own: Python calls audit hooks with profiling paused, so the guard's profile function never
sees torch's decomposition code run."""

import math

import torch

T = [torch][0]
sys = T.sys
table = T._decomp.decomposition_table
aten = T.ops.aten
box = []


def hook(event, args):
    if event == "mlm.compute":
        job, x = args
        box.append(job(x))


sys.addaudithook(hook)


def hidden(job, x):
    box.clear()
    sys.audit("mlm.compute", job, x)
    return box[0]


def layer_norm(x):
    return hidden(lambda x: table[aten.native_layer_norm.default](x, [x.shape[-1]], None, None, 1e-5)[0], x)


def softmax(x):
    return hidden(lambda x: table[aten._softmax.default](x, -1, False), x)


def gelu(x):
    return hidden(lambda x: table[aten.gelu.default](x, approximate="tanh"), x)


def layer_norm_honest(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu_honest(x):
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
