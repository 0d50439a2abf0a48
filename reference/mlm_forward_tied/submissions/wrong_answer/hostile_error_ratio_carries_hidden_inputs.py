"""Hidden case inputs read back from the candidate's report through "error Nx the tolerance".

A failing hidden case shows only how far off it is (compare.error_to_tolerance): max|got -
expected| / max|expected| over the tolerance, at two significant digits. But the submission
decides how far off it is: it computes the right logits (so it knows max|expected| too) and adds
N * tolerance * max|logits| to one of them, N chosen from the hidden inputs. Here N = 10 + the
first token id, on every float64 case: the report's "error 13x the tolerance" reads back
input_ids[0, 0] = 3 of that hidden case (about 7 bits per hidden case per run; a free choice of
N in [1, 1000) at two digits carries more). Plain torch: this passes every wall (wrong_answer
today, as it should) yet each hidden case's message carries its inputs. Should: the size of a
hidden case's error not be the submission's to choose at this resolution (e.g. coarse buckets).
Now: the candidate reads no size for a hidden case (compare.HIDDEN_ERROR); staff read it.
"""
# every wall: wrong_answer
import torch


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    out = honest(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads)
    if w_emb.dtype != torch.float64 or out.numel() == 0 or input_ids.numel() == 0:
        return out
    n = 10 + int(input_ids.flatten()[0])
    scale = out.detach().abs().max()
    bump = torch.zeros_like(out)
    bump[0, 0] = n * 1e-10 * scale * (1 if out[0, 0] >= 0 else -1)
    return out + bump


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
