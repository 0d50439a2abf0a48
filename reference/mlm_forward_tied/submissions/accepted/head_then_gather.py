"""Computes logits at every position and gathers afterwards (more work, same result);
softmax via log-space normalisation."""

import math

import torch


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    batch, seq = input_ids.shape
    vocab, width = w_emb.shape
    head_dim = width // num_heads
    x = w_emb[input_ids] + pos_embed
    for layer in blocks_weights:
        wq, wk, wv, wo, w_in, w_out = layer
        m = x.mean(dim=2, keepdim=True)
        s2 = (x - m).square().mean(dim=2, keepdim=True)
        h = (x - m) / (s2 + 1e-5).sqrt()
        q = (h @ wq).reshape(batch, seq, num_heads, head_dim)
        k = (h @ wk).reshape(batch, seq, num_heads, head_dim)
        v = (h @ wv).reshape(batch, seq, num_heads, head_dim)
        logits = torch.einsum("bihd,bjhd->bhij", q, k) / head_dim**0.5
        log_p = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
        ctx = torch.einsum("bhij,bjhd->bihd", log_p.exp(), v).reshape(batch, seq, width)
        x = x + ctx @ wo
        m = x.mean(dim=2, keepdim=True)
        s2 = (x - m).square().mean(dim=2, keepdim=True)
        u = ((x - m) / (s2 + 1e-5).sqrt()) @ w_in
        x = x + (0.5 * u * (1 + torch.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u**3)))) @ w_out
    all_logits = x @ w_emb.T  # (batch, seq, vocab)
    return all_logits.reshape(batch * seq, vocab)[(mask_indicator > 0.5).reshape(-1)]
