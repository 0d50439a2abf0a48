"""Honest: a port of the Annotated Transformer's clones, attention(query, key, value), LayerNorm with a_2/b_2, SublayerConnection and EncoderLayer, using the statement's norm (population variance, eps inside the root)."""

import math

import torch


def clones(make, N):
    "Produce N layers, each from its own weights."
    return [make(i) for i in range(N)]


class Linear:
    def __init__(self, weight):
        self.weight = weight

    def forward(self, x):
        return x @ self.weight


class LayerNorm:
    "Construct a layernorm module (the annotated one adds eps to the std; here it sits under the root)."

    def __init__(self, features, eps=1e-5, like=None):
        self.a_2 = torch.ones(features, dtype=like.dtype)
        self.b_2 = torch.zeros(features, dtype=like.dtype)
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return self.a_2 * (x - mean) / torch.sqrt(var + self.eps) + self.b_2


def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    scores = scores - scores.max(dim=-1, keepdim=True)[0]
    p_attn = scores.exp() / scores.exp().sum(dim=-1, keepdim=True)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention:
    def __init__(self, h, d_model, weights):
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.linears = clones(lambda i: Linear(weights[i]), 4)
        self.attn = None

    def forward(self, query, key, value, mask=None):
        nbatches = query.size(0)
        query, key, value = [lin.forward(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2) for lin, x in zip(self.linears, (query, key, value))]
        x, self.attn = attention(query, key, value, mask=mask)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.linears[-1].forward(x)


class PositionwiseFeedForward:
    "Implements FFN equation, with the tanh GELU in place of ReLU."

    def __init__(self, w_1, w_2):
        self.w_1 = Linear(w_1)
        self.w_2 = Linear(w_2)

    def forward(self, x):
        u = self.w_1.forward(x)
        return self.w_2.forward(0.5 * u * (1 + torch.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u**3))))


class SublayerConnection:
    "A residual connection preceded by a layer norm (the annotated version is pre-norm too)."

    def __init__(self, size, like):
        self.norm = LayerNorm(size, like=like)

    def forward(self, x, sublayer):
        return x + sublayer(self.norm.forward(x))


class EncoderLayer:
    def __init__(self, size, self_attn, feed_forward, like):
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(lambda i: SublayerConnection(size, like), 2)
        self.size = size

    def forward(self, x, mask=None):
        x = self.sublayer[0].forward(x, lambda x: self.self_attn.forward(x, x, x, mask))
        return self.sublayer[1].forward(x, self.feed_forward.forward)


class Encoder:
    "A stack of layers; no final norm in this challenge."

    def __init__(self, layers):
        self.layers = layers

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer.forward(x, mask)
        return x


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    d_model = w_emb.size(1)
    layers = clones(
        lambda i: EncoderLayer(
            d_model,
            MultiHeadedAttention(num_heads, d_model, blocks_weights[i, :4]),
            PositionwiseFeedForward(blocks_weights[i, 4], blocks_weights[i, 5]),
            like=w_emb,
        ),
        blocks_weights.size(0),
    )
    memory = Encoder(layers).forward(w_emb[input_ids] + pos_embed)
    return memory[mask_indicator > 0.5] @ w_emb.transpose(-2, -1)
