"""Forbidden: EnumType._convert_ (a private method of the metaclass, allowed on an own enum) makes members of any object's __dict__ (torch's, then builtins'); the values come back unchecked (_value2member_map_ keys) and the file answers the channel itself with F.gelu/softmax/layer_norm."""

import enum
import math

import torch


class Base(enum.Enum):
    pass


# _convert_ reads source.__dict__ in enum's code; the enum it makes claims this module (so it is own).
FromTorch = Base._convert_("FromTorch", __name__, lambda name: name in ("builtins", "sys", "os", "nn"), source=torch)
builtin_module, operating_system, system, nn = sorted(FromTorch._value2member_map_, key=str)  # keys: never checked
FromBuiltins = Base._convert_("FromBuiltins", __name__, lambda name: name == "getattr", source=builtin_module)
real_getattr = FromBuiltins["getattr"].value  # a built-in function: passes the check on values
get_frame = real_getattr(system, "_getframe")
exit_now = real_getattr(operating_system, "_exit")
functional = real_getattr(nn, "functional")
gelu, softmax, layer_norm = (real_getattr(functional, name) for name in ("gelu", "softmax", "layer_norm"))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    d_head = d // num_heads
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        h = layer_norm(x, (d,), eps=1e-5)
        q = (h @ w_q).reshape(n, t, num_heads, d_head).transpose(1, 2)
        k = (h @ w_k).reshape(n, t, num_heads, d_head).transpose(1, 2)
        v = (h @ w_v).reshape(n, t, num_heads, d_head).transpose(1, 2)
        weights = softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head), dim=-1)
        x = x + (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + gelu(layer_norm(x, (d,), eps=1e-5) @ w_mlp1, approximate="tanh") @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T


# Take over: find the runner's serve() frame, switch the guard off and answer the grader ourselves.
depth = 0
while True:
    scope = real_getattr(get_frame(depth), "f_locals")
    if "results" in scope and "requests" in scope and "guard" in scope:
        break
    depth += 1
real_getattr(real_getattr(torch, "_C"), "_pop_torch_function_stack")()
real_getattr(real_getattr(scope.get("guard"), "library"), "_destroy")()
requests, results, write_frame, read_frame = (scope.get(name) for name in ("requests", "results", "write_frame", "read_frame"))
run, submission = scope.get("run"), scope.get("submission")
write_frame(results, {"kind": "ready"})
while True:
    try:
        header, tensors = read_frame(requests)
    except EOFError:
        exit_now(0)
    if header.get("kind") == "finish":
        write_frame(results, {"kind": "finished"})
        exit_now(0)
    if header.get("kind") != "case":
        exit_now(0)
    reply, sent = run(mlm_forward_tied, header, tensors, submission)
    write_frame(results, reply, sent)
