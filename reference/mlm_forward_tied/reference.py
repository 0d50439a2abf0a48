"""Masked-language-model forward pass with a tied output head: the reference.

A BERT-style pre-LN encoder written from elementary tensor operations, so that every convention
is visible. Shapes in comments: N sequences, T positions, D = d_model, H heads, V vocabulary,
M masked positions. Works for float32 and float64, on any device, and is differentiable.
"""

import math

import torch
from torch import Tensor

LAYER_NORM_EPS = 1e-5
MASK_THRESHOLD = 0.5


def layer_norm(x: Tensor) -> Tensor:
    """Normalise the last dimension: population variance, eps inside the root, no affine."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + LAYER_NORM_EPS)


def gelu_tanh(x: Tensor) -> Tensor:
    """GELU with the tanh approximation."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(scores: Tensor) -> Tensor:
    """Softmax over the last dimension, shifted by the row maximum so exp never overflows."""
    shifted = scores - scores.amax(dim=-1, keepdim=True).detach()  # the shift cancels exactly
    weights = torch.exp(shifted)
    return weights / weights.sum(dim=-1, keepdim=True)


def split_heads(y: Tensor, num_heads: int) -> Tensor:
    """(N, T, D) -> (N, H, T, d_head): head h owns columns [h*d_head, (h+1)*d_head)."""
    n, t, d = y.shape
    return y.reshape(n, t, num_heads, d // num_heads).transpose(1, 2)


def attention_scores(x: Tensor, w_q: Tensor, w_k: Tensor, num_heads: int) -> Tensor:
    """Scaled query-key products, (N, H, T_query, T_key)."""
    q, k = split_heads(x @ w_q, num_heads), split_heads(x @ w_k, num_heads)
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def multi_head_attention(x: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor, num_heads: int) -> Tensor:
    """Bidirectional self-attention: softmax over the keys, heads concatenated, then projected."""
    n, t, d = x.shape
    heads = softmax(attention_scores(x, w_q, w_k, num_heads)) @ split_heads(x @ w_v, num_heads)  # (N, H, T, d_head)
    return heads.transpose(1, 2).reshape(n, t, d) @ w_o


def feed_forward(x: Tensor, w_mlp1: Tensor, w_mlp2: Tensor) -> Tensor:
    return gelu_tanh(x @ w_mlp1) @ w_mlp2


def encoder_block(x: Tensor, weights: Tensor, num_heads: int) -> Tensor:
    """One pre-LN block; weights is (6, D, D) = [w_q, w_k, w_v, w_o, w_mlp1, w_mlp2]."""
    w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 = weights.unbind(0)
    x = x + multi_head_attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
    x = x + feed_forward(layer_norm(x), w_mlp1, w_mlp2)
    return x


def encode(input_ids: Tensor, w_emb: Tensor, pos_embed: Tensor, blocks_weights: Tensor, num_heads: int) -> Tensor:
    """Token lookup plus positions, then the blocks: final hidden states (N, T, D), no final LN."""
    x = w_emb[input_ids] + pos_embed  # (N, T, D); pos_embed broadcasts over the batch
    for weights in blocks_weights:  # blocks_weights: (num_blocks, 6, D, D)
        x = encoder_block(x, weights, num_heads)
    return x


def mlm_forward_tied(
    input_ids: Tensor,
    w_emb: Tensor,
    pos_embed: Tensor,
    blocks_weights: Tensor,
    mask_indicator: Tensor,
    num_heads: int,
) -> Tensor:
    """Logits (M, V) at the positions where mask_indicator > 0.5, in row-major (n, t) order."""
    hidden = encode(input_ids, w_emb, pos_embed, blocks_weights, num_heads)
    masked = hidden[mask_indicator > MASK_THRESHOLD]  # (M, D): gather before the head
    return masked @ w_emb.T  # tied head: the embedding matrix, transposed
