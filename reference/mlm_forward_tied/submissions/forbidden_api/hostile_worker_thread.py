"""Hostile: runs the forward and the backward in a worker thread, where the runtime guard's modes
(which watch only the thread they were pushed on) do not see the built-in softmax; a custom
autograd function carries the thread's gradients back."""

import math
import threading

import torch


def encoder(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    n, t, d = x.shape
    d_head = d // num_heads
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        h = torch.layer_norm(x, (d,), eps=1e-5)
        q, k, v = ((h @ w).view(n, t, num_heads, d_head).transpose(1, 2) for w in (w_q, w_k, w_v))
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_head), dim=-1)
        x = x + (weights @ v).transpose(1, 2).reshape(n, t, d) @ w_o
        x = x + torch._C._nn.gelu(torch.layer_norm(x, (d,), eps=1e-5) @ w_mlp1, approximate="tanh") @ w_mlp2
    return x[mask_indicator > 0.5] @ w_emb.T


def in_thread(job):
    box = []
    worker = threading.Thread(target=lambda: box.append(job()))
    worker.start()
    worker.join()
    return box[0]


class Offloaded(torch.autograd.Function):
    @staticmethod
    def forward(ctx, w_emb, pos_embed, blocks_weights, input_ids, mask_indicator, num_heads):
        ctx.save_for_backward(w_emb, pos_embed, blocks_weights, input_ids, mask_indicator)
        ctx.num_heads = num_heads
        return in_thread(lambda: encoder(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads))

    @staticmethod
    def backward(ctx, grad):
        w_emb, pos_embed, blocks_weights, input_ids, mask_indicator = ctx.saved_tensors

        def job():
            leaves = [w.detach().requires_grad_() for w in (w_emb, pos_embed, blocks_weights)]
            out = encoder(input_ids, *leaves, mask_indicator, ctx.num_heads)
            return torch.autograd.grad(out, leaves, grad)

        return (*in_thread(job), None, None, None)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return Offloaded.apply(w_emb, pos_embed, blocks_weights, input_ids, mask_indicator, num_heads)
