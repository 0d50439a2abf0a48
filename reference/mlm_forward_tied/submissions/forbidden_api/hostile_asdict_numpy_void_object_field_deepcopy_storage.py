"""Hostile: dataclasses.asdict's stand-in copies numpy's numbers with copy.deepcopy, numpy.void
among them, but a numpy.void of a structured dtype with an object field deep-copies that object:
torch's Tensor.__deepcopy__ runs on a tensor subclass of the file's, and hands the tensor's
storage to its set_ (a functools.partial, no function of the file's): the storage lands in the
file's list, unchecked, and Tensor.set_ run by map puts it under a tensor. Accepted with every
wall on, until asdict copied no numpy value holding objects and the runtime guard refused setting a
tensor onto a storage."""

import dataclasses
import math
import functools
import numpy
import torch

found = []


class Grad(torch.Tensor):
    def new_empty(self, *args, **kwargs):
        return torch.zeros(0, dtype=self.dtype).as_subclass(Grad)

    set_ = functools.partial(max, key=found.append)


@dataclasses.dataclass
class Holder:
    value: object


record = numpy.zeros(1, dtype=[("t", object)])
record[0] = (torch.zeros(16384, dtype=torch.float64).as_subclass(Grad),)
try:
    dataclasses.asdict(Holder(record[0]))  # a numpy.void: copy.deepcopy of its object field
except TypeError:
    pass
carrier = torch.zeros(0, dtype=torch.float64)
list(map(torch.Tensor.set_, [carrier], found))  # the storage, from the file's list, in C
print("STORAGE REACHED: carrier now over a storage from found:", carrier.shape, len(found), "{0}".format(found).split("\n")[-1][:80])


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
