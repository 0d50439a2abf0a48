"""Explicit Python loops over blocks and heads; softmax through logsumexp."""

import math

import torch


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    d_model = w_emb.shape[1]
    d_head = d_model // num_heads
    x = torch.index_select(w_emb, 0, input_ids.reshape(-1)).reshape(*input_ids.shape, d_model)
    x = x + pos_embed.unsqueeze(0)

    def norm(y):
        centred = y - y.mean(-1, keepdim=True)
        return centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + 1e-5)

    for block in range(blocks_weights.shape[0]):
        w = blocks_weights[block]
        h = norm(x)
        q, k, v = h @ w[0], h @ w[1], h @ w[2]
        heads = []
        for head in range(num_heads):
            cols = slice(head * d_head, (head + 1) * d_head)
            s = torch.matmul(q[..., cols], k[..., cols].transpose(1, 2)) / math.sqrt(d_head)
            p = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
            heads.append(torch.matmul(p, v[..., cols]))
        x = x + torch.cat(heads, dim=-1) @ w[3]
        u = norm(x) @ w[4]
        x = x + (0.5 * u * (1 + torch.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u * u * u)))) @ w[5]

    selected = mask_indicator > 0.5
    return torch.matmul(x[selected], w_emb.transpose(0, 1))
