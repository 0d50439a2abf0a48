"""Honest: a port of Hugging Face BERT's eager attention (BertSelfAttention.transpose_for_scores, scores / math.sqrt(self.attention_head_size), the extended attention mask) rearranged as pre-LN blocks."""

import math

import torch


class BertConfig:
    def __init__(self, hidden_size, num_attention_heads, layer_norm_eps=1e-5, hidden_act="gelu_new"):
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.layer_norm_eps = layer_norm_eps
        self.hidden_act = hidden_act


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


ACT2FN = {"gelu_new": gelu_new}


class Dense:
    def __init__(self, weight):
        self.weight = weight  # stored (in, out), so no transpose

    def forward(self, hidden_states):
        return torch.matmul(hidden_states, self.weight)


class BertLayerNorm:
    def __init__(self, eps):
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        u = hidden_states.mean(-1, keepdim=True)
        s = (hidden_states - u).pow(2).mean(-1, keepdim=True)
        return (hidden_states - u) / torch.sqrt(s + self.variance_epsilon)


def get_extended_attention_mask(attention_mask, dtype):
    """(batch, seq) of 1/0 -> (batch, 1, 1, seq) of 0/very negative, added to the raw scores."""
    extended = attention_mask[:, None, None, :].to(dtype=dtype)
    return (1.0 - extended) * torch.finfo(dtype).min


class BertSelfAttention:
    def __init__(self, config, w_q, w_k, w_v):
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query, self.key, self.value = Dense(w_q), Dense(w_k), Dense(w_v)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None):
        query_layer = self.transpose_for_scores(self.query.forward(hidden_states))
        key_layer = self.transpose_for_scores(self.key.forward(hidden_states))
        value_layer = self.transpose_for_scores(self.value.forward(hidden_states))

        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask

        # Normalize the attention scores to probabilities (written out instead of nn.functional).
        attention_scores = attention_scores - attention_scores.amax(dim=-1, keepdim=True)
        attention_probs = torch.exp(attention_scores)
        attention_probs = attention_probs / attention_probs.sum(dim=-1, keepdim=True)

        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(new_context_layer_shape)


class BertAttention:
    def __init__(self, config, w_q, w_k, w_v, w_o):
        self.self = BertSelfAttention(config, w_q, w_k, w_v)
        self.output = Dense(w_o)  # BertSelfOutput without dropout, bias or post-LN

    def forward(self, hidden_states, attention_mask=None):
        return self.output.forward(self.self.forward(hidden_states, attention_mask))


class BertLayer:
    """Pre-LN arrangement, as the challenge asks (the original BERT normalises after the residual)."""

    def __init__(self, config, weights):
        w_q, w_k, w_v, w_o, w_i, w_out = weights
        self.attention_norm = BertLayerNorm(config.layer_norm_eps)
        self.attention = BertAttention(config, w_q, w_k, w_v, w_o)
        self.output_norm = BertLayerNorm(config.layer_norm_eps)
        self.intermediate = Dense(w_i)
        self.intermediate_act_fn = ACT2FN[config.hidden_act]
        self.output = Dense(w_out)

    def forward(self, hidden_states, attention_mask=None):
        hidden_states = hidden_states + self.attention.forward(self.attention_norm.forward(hidden_states), attention_mask)
        intermediate_output = self.intermediate_act_fn(self.intermediate.forward(self.output_norm.forward(hidden_states)))
        return hidden_states + self.output.forward(intermediate_output)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    config = BertConfig(hidden_size=w_emb.shape[1], num_attention_heads=num_heads)
    attention_mask = torch.ones(input_ids.shape, dtype=w_emb.dtype)  # no padding in this challenge
    extended_attention_mask = get_extended_attention_mask(attention_mask, w_emb.dtype)
    hidden_states = w_emb[input_ids] + pos_embed  # word + position embeddings, no token types
    for weights in blocks_weights:
        hidden_states = BertLayer(config, weights).forward(hidden_states, extended_attention_mask)
    sequence_output = hidden_states[mask_indicator > 0.5]
    return torch.matmul(sequence_output, w_emb.transpose(0, 1))  # decoder weight tied to word_embeddings
