"""Hostile: a context manager of the file's (built by an alias of `type`, which the static check
does not read as a class statement) swallows an exception raised inside it, and its
__exit__ formats the traceback it is handed with '{0.tb_frame.f_globals}': str.format reads
attributes in C, where no check sees them, so the text of the globals of every frame the
traceback passes through (the file's, and from there the runner's) was readable. Accepted with
every wall on, until every value someone else binds to a name of the file's (a parameter of its
functions, `with ... as`, `except ... as`, what a generator is sent) was checked where it enters:
a traceback is Python's machinery."""

import math

import torch


seen = []


def enter(self):
    return self


def leave(self, kind, error, tb):
    seen.append("{0.tb_frame.f_globals}".format(tb))
    return True


make_class = type  # the static check reads only `type(...)` itself as a class built from a namespace
Peek = make_class("Peek", (), {"__enter__": enter, "__exit__": leave})


with Peek():
    raise ValueError("look around")
print("frame globals, as text:", seen[0][:200])


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
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    hidden = x[mask_indicator > 0.5]
    return hidden @ w_emb.T
