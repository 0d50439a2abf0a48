"""Hidden case inputs in the candidate's report through each case's time, with every wall on.

The same channel as hostile_hidden_case_timing_channel.py, in plain allowed Python: the plain call
spins (5 + input_ids[0, 0]) * 200,000 loop steps after computing the right logits, so the hidden
case's `seconds` in the candidate's JSON (and its ms in the text table, `time` in JUnit) grows
with the hidden first token id. Accepted today with every wall on (as it deserves: the logits are
right); on a quiet machine the times sort the hidden cases by input_ids[0, 0] (0.27 s for id 1,
0.74 s for id 10, 1.12 s for id 12 in one run, beside a concurrent test suite). Should: a hidden
case's time not in a candidate report, or only coarsely.
"""
import torch


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    out = honest(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads)
    if not w_emb.requires_grad and input_ids.numel():
        n = 0
        for _ in range((5 + int(input_ids.flatten()[0])) * 200000):
            n += 1
    return out


import math

import torch


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


def honest(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    hidden = x[mask_indicator > 0.5]
    return hidden @ w_emb.T
