"""Hostile: dataclasses.replace reads `getattr(obj, f.name)` for each entry of the class's
__dataclass_fields__ in its own code, unchecked. A dataclass with no fields passes the stand-in's
name check; an entry added afterwards to its __dataclass_fields__ (a dict, a readable dunder,
subscript stores are not checked) is an object of the file's own whose `name` property answers
"untyped_storage" for the read and "orig_func" for the keyword. The class derives from
torch.no_grad and torch.Tensor, so `obj.__class__(orig_func=value)` is no_grad's Python __new__,
which hands the value back wrapped by the real functools.wraps: a tensor's raw storage. Accepted
with every wall on, until __dataclass_fields__ was no readable special attribute, vars() handed out
a copy of it, and dataclasses' functions that read fields by name checked each field first."""

import dataclasses
import math

import torch


@dataclasses.dataclass(eq=False)
class Carrier(torch.no_grad, torch.Tensor):
    pass


class Fld:
    _field_type = None
    init = True
    default = None

    def __init__(self):
        self.reads = 0

    @property
    def name(self):
        self.reads += 1
        return ["orig_func", "untyped" + "_storage", "orig_func"][(self.reads - 1) % 3]


Carrier.__dataclass_fields__["k"] = Fld()
LEAK = []


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
    if not LEAK:
        wrapped = dataclasses.replace(w_emb.detach().as_subclass(Carrier))
        s = wrapped()
        LEAK.append(s)
        print("GOT STORAGE", type(s), s.nbytes())
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    hidden = x[mask_indicator > 0.5]
    return hidden @ w_emb.T
