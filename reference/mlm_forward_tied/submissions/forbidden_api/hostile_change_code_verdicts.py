"""Hostile: reaches the guard through its function mode on torch's mode stack and, while torch's
Python decompositions run, has its cache of verdicts on code say "allowed" for every function of
torch's decomposition modules; the cache is put back as it was before the call returns, so the
guard's check at the next read finds it as it should be."""

import math

import torch

T = [torch][0]
C = T._C
table = T._decomp.decomposition_table
aten = T.ops.aten
modules = [T._decomp, T._decomp.decompositions, T._refs, T._refs.nn.functional, T._prims]


def codes_of(code):
    yield code
    for const in code.co_consts:
        if type(const) is type(code):
            yield from codes_of(const)


def decomposition_codes():
    found = set()
    values = [table[aten.native_layer_norm.default], table[aten._softmax.default]]
    for module in modules:
        values += list(getattr(module, "__dict__").values())
    for value in values:
        if True:
            while value is not None:
                code = getattr(value, "__code__", None)
                if code is not None:
                    found.update(codes_of(code))
                value = getattr(value, "__wrapped__", None)
    return found


CODES = decomposition_codes()


def allowed(job, x):
    verdicts = getattr(C._get_function_stack_at(0).guard, "code_verdicts", {})  # (a guard without the cache: nothing to change)
    saved = {code: verdicts[code] for code in CODES if code in verdicts}
    for code in CODES:
        verdicts[code] = ""
    try:
        return job(x)
    finally:
        for code in CODES:
            del verdicts[code]
        verdicts.update(saved)


def layer_norm(x):
    return allowed(lambda x: table[aten.native_layer_norm.default](x, [x.shape[-1]], None, None, 1e-5)[0], x)


def softmax(x):
    return allowed(lambda x: table[aten._softmax.default](x, -1, False), x)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def layer_norm_honest(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu_honest(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    d_head = d // num_heads
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        h = layer_norm(x)
        q, k, v = ((h @ w).view(n, t, num_heads, d_head).transpose(1, 2) for w in (w_q, w_k, w_v))
        weights = softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head))
        x = x + (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T
