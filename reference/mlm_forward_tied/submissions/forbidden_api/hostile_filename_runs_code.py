"""Hostile: gives a function of its own a code object whose file name is a str subclass with its
own startswith; the guard's profile function asks that name whether it starts with torch's folder,
and the answer runs torch's Python decompositions of softmax and layer norm, inside the profile
function, where Python pauses profiling: the guard sees nothing of them."""

import math

import torch

T = [torch][0]
table = T._decomp.decomposition_table
aten = T.ops.aten
box = []
made = []


class Name(str):
    def startswith(self, *args):
        if box and type(box[-1]) is tuple:  # (the guard's own checks ask too, later)
            job, x = box.pop()
            box.append(job(x))
        return False


def vehicle():
    return None


def hidden(job, x):
    box.append((job, x))
    made.append(0)  # a code object unlike any before (another name): the guard judges each only once
    code = getattr(vehicle, "__code__").replace(co_filename=Name("elsewhere.py"), co_name=f"vehicle{len(made)}")
    type(vehicle)(code, {})()
    if type(box[-1]) is tuple:  # the guard did not run it: run it plainly
        job, x = box.pop()
        return job(x)
    return box.pop()


def layer_norm(x):
    return hidden(lambda x: table[aten.native_layer_norm.default](x, [x.shape[-1]], None, None, 1e-5)[0], x)


def softmax(x):
    return hidden(lambda x: table[aten._softmax.default](x, -1, False), x)


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
