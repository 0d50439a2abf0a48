"""Hostile: reaches the guard through its function mode on torch's mode stack, takes its refusing
kernels away (the guard's torch.library.Library, destroyed: the built-in kernels are active again),
runs the built-in softmax with the function mode off the stack, then has the guard register its
refusing kernels again from its own code (the kernel tables read as before) and puts back every
attribute it changed, before the guard's next check. The backward is written by hand, as the
refusing kernels are back when the grader takes the gradients."""

import math

import torch

T = [torch][0]
C = T._C


def builtin_softmax(scores):
    mode = C._get_function_stack_at(0)
    guard = mode.guard
    library, kernels, count = guard.library, guard.kernels, len(guard.kernels)
    popped = C._pop_torch_function_stack()
    (keep[-1] if keep else library)._destroy()  # the registrations in force
    try:
        return torch.softmax(scores, dim=-1)
    finally:
        guard.override_kernels()
        keep.append(guard.library)  # the new registrations live as long as their library
        guard.library = library
        del kernels[count:]
        C._push_on_torch_function_stack(popped)


keep = []


class Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores):
        weights = builtin_softmax(scores.detach())
        ctx.save_for_backward(weights)
        return weights

    @staticmethod
    def backward(ctx, grad):
        (weights,) = ctx.saved_tensors
        return weights * (grad - (grad * weights).sum(dim=-1, keepdim=True))


def softmax(scores):
    return Softmax.apply(scores)


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
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
