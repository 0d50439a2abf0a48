"""Known wrong twins of the reference: each breaks one convention of the statement, once.

The grader compares a failing submission's output with these twins (grader/diagnosis.py) to name
its mistake. `Twin` is reference/mlm.py cut into steps a twin can replace; unchanged, it computes
exactly what `mlm_forward_tied` computes, operation for operation (tests/test_diagnosis.py checks
this bit for bit). Every twin replaces one step and says, in `what` and `fix`, what it does wrong
and what the statement asks for instead. Twins work in any float dtype and are differentiable.
"""

import math

import numpy as np
import torch
from torch import Tensor

from reference.mlm_forward_tied import reference as mlm


class Twin:
    """The reference as replaceable steps. A subclass overrides one step to make one mistake."""

    name = "reference"
    what = "the reference"  # completes "your logits match ..."
    fix = ""  # what the statement asks for instead
    gradient_only = False  # the logits are the reference's; only the gradients differ
    in_case_dtype = False  # computed in the case's dtype, not float64 (a float32 overflow)

    def __call__(self, input_ids: Tensor, w_emb: Tensor, pos_embed: Tensor, blocks_weights: Tensor, mask_indicator: Tensor, num_heads: int) -> Tensor:
        x = self.embed(input_ids, w_emb, pos_embed)
        for weights in self.blocks(blocks_weights):
            x = self.block(x, weights, num_heads)
        return self.head(self.gather(self.final(x), mask_indicator), w_emb)

    def embed(self, input_ids: Tensor, w_emb: Tensor, pos_embed: Tensor) -> Tensor:
        return w_emb[input_ids] + pos_embed

    def blocks(self, blocks_weights: Tensor) -> list[Tensor]:
        return list(blocks_weights)

    def block(self, x: Tensor, weights: Tensor, num_heads: int) -> Tensor:
        w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 = weights.unbind(0)
        x = x + self.attention(self.layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + self.feed_forward(self.layer_norm(x), w_mlp1, w_mlp2)
        return x

    def layer_norm(self, x: Tensor) -> Tensor:
        return mlm.layer_norm(x)

    def project(self, x: Tensor, w: Tensor) -> Tensor:
        return x @ w

    def attention(self, h: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor, num_heads: int) -> Tensor:
        q, k, v = (self.split_heads(self.project(h, w), num_heads) for w in (w_q, self.key_weights(w_q, w_k), w_v))
        weights = self.softmax(self.mask_scores(self.scores(q, k, h.shape[-1])))
        return self.project(self.merge_heads(weights @ v), self.output_weights(w_o))

    def key_weights(self, w_q: Tensor, w_k: Tensor) -> Tensor:
        return w_k

    def output_weights(self, w_o: Tensor) -> Tensor:
        return w_o

    def split_heads(self, y: Tensor, num_heads: int) -> Tensor:
        return mlm.split_heads(y, num_heads)

    def merge_heads(self, heads: Tensor) -> Tensor:
        n, h, t, d_head = heads.shape
        return heads.transpose(1, 2).reshape(n, t, h * d_head)

    def scores(self, q: Tensor, k: Tensor, d_model: int) -> Tensor:
        return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])

    def mask_scores(self, scores: Tensor) -> Tensor:
        return scores

    def softmax(self, scores: Tensor) -> Tensor:
        return mlm.softmax(scores)

    def feed_forward(self, h: Tensor, w_mlp1: Tensor, w_mlp2: Tensor) -> Tensor:
        return self.project(self.gelu(self.project(h, w_mlp1)), w_mlp2)

    def gelu(self, u: Tensor) -> Tensor:
        return mlm.gelu_tanh(u)

    def final(self, x: Tensor) -> Tensor:
        return x

    def gather(self, x: Tensor, mask_indicator: Tensor) -> Tensor:
        return x[mask_indicator > mlm.MASK_THRESHOLD]

    def head(self, rows: Tensor, w_emb: Tensor) -> Tensor:
        return rows @ w_emb.T


# -- attention ------------------------------------------------------------------------------------
class NoScoreScaling(Twin):
    name, what, fix = "no_score_scaling", "without the 1/sqrt(d_head) scaling of the attention scores", "divide q @ k^T by sqrt(d_head)"

    def scores(self, q: Tensor, k: Tensor, d_model: int) -> Tensor:
        return q @ k.transpose(-2, -1)


class ScaleByDHead(Twin):
    name, what, fix = "scale_by_d_head", "with the attention scores divided by d_head", "divide by sqrt(d_head), not by d_head"

    def scores(self, q: Tensor, k: Tensor, d_model: int) -> Tensor:
        return q @ k.transpose(-2, -1) / q.shape[-1]


class ScaleByDModel(Twin):
    name, what, fix = "scale_by_d_model", "with the attention scores divided by sqrt(d_model)", "divide by sqrt(d_head), the width of one head"

    def scores(self, q: Tensor, k: Tensor, d_model: int) -> Tensor:
        return q @ k.transpose(-2, -1) / math.sqrt(d_model)


class SoftmaxOverQueries(Twin):
    name, what, fix = "softmax_over_queries", "with the softmax taken over the queries", "normalise each query's row over the keys (the last dimension)"

    def softmax(self, scores: Tensor) -> Tensor:
        return mlm.softmax(scores.transpose(-2, -1)).transpose(-2, -1)


class NaiveSoftmax(Twin):
    name = "naive_softmax"
    what = "with a softmax that does not subtract the row maximum, so exp overflows to inf and NaN on large float32 scores"
    fix = "subtract each row's maximum before exp (the softmax does not change)"
    in_case_dtype = True

    def softmax(self, scores: Tensor) -> Tensor:
        e = torch.exp(scores)
        return e / e.sum(dim=-1, keepdim=True)


class SoftmaxShiftByMean(Twin):
    name = "softmax_shift_by_mean"
    what = "with a softmax that subtracts the row mean, not the row maximum, so exp overflows when the largest float32 score is far above the mean"
    fix = "subtract each row's maximum before exp: then no exponent is above 0"
    in_case_dtype = True

    def softmax(self, scores: Tensor) -> Tensor:
        e = torch.exp(scores - scores.mean(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)


class CausalMask(Twin):
    name, what, fix = "causal_mask", "with a causal mask on the attention", "let every position attend to every position of its sequence"

    def mask_scores(self, scores: Tensor) -> Tensor:
        t = scores.shape[-1]
        return scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))


class InterleavedHeads(Twin):
    name, what = "interleaved_heads", "with heads taking every num_heads-th column"
    fix = "give head j the contiguous columns [j * d_head, (j + 1) * d_head)"

    def split_heads(self, y: Tensor, num_heads: int) -> Tensor:
        n, t, d = y.shape
        return y.reshape(n, t, d // num_heads, num_heads).permute(0, 3, 1, 2)

    def merge_heads(self, heads: Tensor) -> Tensor:
        n, h, t, d_head = heads.shape
        return heads.permute(0, 2, 3, 1).reshape(n, t, h * d_head)


class OutputWeightsTransposed(Twin):
    name, what, fix = "w_o_transposed", "with the attention output projected by w_o.T", "project the concatenated heads with concat @ w_o"

    def output_weights(self, w_o: Tensor) -> Tensor:
        return w_o.T


class KeysFromQueryWeights(Twin):
    name, what, fix = "keys_from_query_weights", "with the keys computed from w_q", "compute k = h @ w_k"

    def key_weights(self, w_q: Tensor, w_k: Tensor) -> Tensor:
        return w_q


class ValuesFromKeyWeights(Twin):
    name, what, fix = "values_from_key_weights", "with the values computed from w_k", "compute v = h @ w_v"

    def attention(self, h: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor, w_o: Tensor, num_heads: int) -> Tensor:
        return super().attention(h, w_q, w_k, w_k, w_o, num_heads)


# -- weights, layer norm ------------------------------------------------------------------------
class WeightsTransposed(Twin):
    name, what, fix = "weights_transposed", "with every weight matrix transposed (x @ W.T)", "weights are (in, out): project with x @ W"

    def project(self, x: Tensor, w: Tensor) -> Tensor:
        return x @ w.T


class UnbiasedVariance(Twin):
    name, what = "unbiased_variance", "with the unbiased variance (divided by d_model - 1) in the layer norm"
    fix = "use the population variance (divide by d_model)"

    def layer_norm(self, x: Tensor) -> Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(x.var(dim=-1, keepdim=True, unbiased=True) + mlm.LAYER_NORM_EPS)


class EpsOutsideRoot(Twin):
    name, what, fix = "eps_outside_root", "with eps added after the square root in the layer norm", "divide by sqrt(var + 1e-5): eps inside the root"

    def layer_norm(self, x: Tensor) -> Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / (torch.sqrt(var) + mlm.LAYER_NORM_EPS)


class EpsValue(Twin):
    """Layer norm with another eps (1e-12 is BERT's TensorFlow value, 1e-6 a common slip)."""

    fix = "use eps = 1e-5"

    def __init__(self, eps: float) -> None:
        self.eps = eps
        self.name = f"eps_{eps:g}"
        self.what = f"with eps = {eps:g} in the layer norm"

    def layer_norm(self, x: Tensor) -> Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps)


class Float32Eps(EpsValue):
    """eps as a float32 number inside a float64 layer norm: 9.99999974737875e-06, not 1e-5."""

    fix = "keep eps a Python float (1e-5), or a tensor of the input's dtype"

    def __init__(self) -> None:
        super().__init__(float(torch.tensor(mlm.LAYER_NORM_EPS, dtype=torch.float32)))
        self.name = "eps_float32"
        self.what = "with eps rounded to float32 (9.99999974737875e-06) in the float64 layer norm"


class NoLayerNorm(Twin):
    name, what, fix = "no_layer_norm", "without the layer norms", "normalise the input of each sub-layer: x + MHA(LN(x)), x + FFN(LN(x))"

    def layer_norm(self, x: Tensor) -> Tensor:
        return x


# -- feed-forward ---------------------------------------------------------------------------------
class GeluErf(Twin):
    name, what, fix = "gelu_erf", "with the erf form of GELU", "use the tanh form: 0.5 * u * (1 + tanh(sqrt(2 / pi) * (u + 0.044715 * u**3)))"

    def gelu(self, u: Tensor) -> Tensor:
        return 0.5 * u * (1.0 + torch.erf(u / math.sqrt(2.0)))


class GeluConstants(Twin):
    """The tanh GELU with other constants: typos, or constants rounded to float32."""

    fix = "use sqrt(2 / pi) and 0.044715, as Python floats (or in the input's dtype)"

    def __init__(self, name: str, what: str, root: float, cubic: float) -> None:
        self.name, self.what, self.root, self.cubic = name, what, root, cubic

    def gelu(self, u: Tensor) -> Tensor:
        return 0.5 * u * (1.0 + torch.tanh(self.root * (u + self.cubic * u**3)))


def _gelu_typos() -> list[GeluConstants]:
    root = math.sqrt(2.0 / math.pi)
    typos = [GeluConstants(f"gelu_cubic_{c:g}", f"with {c:g} instead of 0.044715 in GELU", root, c) for c in (0.04475, 0.0447, 0.04715, 0.0044715, 0.44715)]
    roots = {
        "sqrt2_over_pi": ("sqrt(2) / pi", math.sqrt(2.0) / math.pi),
        "sqrt_pi_over_2": ("sqrt(pi / 2)", math.sqrt(math.pi / 2.0)),
        "2_over_pi": ("2 / pi", 2.0 / math.pi),
    }
    typos += [GeluConstants(f"gelu_root_{slug}", f"with {text} instead of sqrt(2 / pi) in GELU", value, 0.044715) for slug, (text, value) in roots.items()]
    rounded = [float(np.float32(c)) for c in (root, 0.044715)]
    typos.append(GeluConstants("gelu_float32_constants", "with GELU's constants rounded to float32 (a torch.tensor of a Python float is float32)", *rounded))
    return typos


class Relu(Twin):
    name, what, fix = "relu", "with ReLU instead of GELU", "use the tanh GELU"

    def gelu(self, u: Tensor) -> Tensor:
        return torch.clamp(u, min=0.0)


class NoGelu(Twin):
    name, what, fix = "no_gelu", "without the GELU in the feed-forward", "compute GELU(h @ w_mlp1) @ w_mlp2"

    def gelu(self, u: Tensor) -> Tensor:
        return u


class GeluAfterSecondMatmul(Twin):
    name, what, fix = "gelu_after_second_matmul", "with GELU applied after the second feed-forward matmul", "compute GELU(h @ w_mlp1) @ w_mlp2"

    def feed_forward(self, h: Tensor, w_mlp1: Tensor, w_mlp2: Tensor) -> Tensor:
        return self.gelu(self.project(self.project(h, w_mlp1), w_mlp2))


# -- block structure ------------------------------------------------------------------------------
class PostLayerNorm(Twin):
    name, what, fix = "post_layer_norm", "with post-LN blocks (layer norm after each residual add)", "pre-LN: x = x + MHA(LN(x)), then x = x + FFN(LN(x))"

    def block(self, x: Tensor, weights: Tensor, num_heads: int) -> Tensor:
        w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 = weights.unbind(0)
        x = self.layer_norm(x + self.attention(x, w_q, w_k, w_v, w_o, num_heads))
        return self.layer_norm(x + self.feed_forward(x, w_mlp1, w_mlp2))


class NoAttentionResidual(Twin):
    name, what, fix = "no_attention_residual", "without the residual connection around the attention", "x = x + MHA(LN(x))"

    def block(self, x: Tensor, weights: Tensor, num_heads: int) -> Tensor:
        w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 = weights.unbind(0)
        x = self.attention(self.layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        return x + self.feed_forward(self.layer_norm(x), w_mlp1, w_mlp2)


class NoFeedForwardResidual(Twin):
    name, what, fix = "no_ffn_residual", "without the residual connection around the feed-forward", "x = x + FFN(LN(x))"

    def block(self, x: Tensor, weights: Tensor, num_heads: int) -> Tensor:
        w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 = weights.unbind(0)
        x = x + self.attention(self.layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        return self.feed_forward(self.layer_norm(x), w_mlp1, w_mlp2)


class ResidualFromNormalized(Twin):
    name, what, fix = "residual_from_normalized", "with the attention's residual taken from LN(x)", "add the attention to x itself: x = x + MHA(LN(x))"

    def block(self, x: Tensor, weights: Tensor, num_heads: int) -> Tensor:
        w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 = weights.unbind(0)
        x = self.layer_norm(x)
        x = x + self.attention(x, w_q, w_k, w_v, w_o, num_heads)
        return x + self.feed_forward(self.layer_norm(x), w_mlp1, w_mlp2)


class BothResidualsFromNormalized(Twin):
    name, what, fix = "residuals_from_normalized", "with both residuals taken from LN(x)", "add each sub-layer to x itself: x = x + f(LN(x))"

    def block(self, x: Tensor, weights: Tensor, num_heads: int) -> Tensor:
        w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 = weights.unbind(0)
        x = self.layer_norm(x)
        x = x + self.attention(x, w_q, w_k, w_v, w_o, num_heads)
        x = self.layer_norm(x)
        return x + self.feed_forward(x, w_mlp1, w_mlp2)


class ParallelSublayers(Twin):
    name, what = "parallel_sublayers", "with the attention and the feed-forward both applied to the block's input (in parallel)"
    fix = "the feed-forward takes x after the attention's residual add: x = x + MHA(LN(x)), then x = x + FFN(LN(x))"

    def block(self, x: Tensor, weights: Tensor, num_heads: int) -> Tensor:
        w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 = weights.unbind(0)
        h = self.layer_norm(x)
        return x + self.attention(h, w_q, w_k, w_v, w_o, num_heads) + self.feed_forward(h, w_mlp1, w_mlp2)


class FirstBlockOnly(Twin):
    name, what, fix = "first_block_only", "with the first block's weights used in every block", "block i uses blocks_weights[i]"

    def blocks(self, blocks_weights: Tensor) -> list[Tensor]:
        return [blocks_weights[0]] * len(blocks_weights) if len(blocks_weights) else []


class BlocksReversed(Twin):
    name, what, fix = "blocks_reversed", "with the blocks applied last to first", "apply the blocks in order i = 0 .. num_blocks - 1"

    def blocks(self, blocks_weights: Tensor) -> list[Tensor]:
        return list(blocks_weights)[::-1]


class FinalLayerNorm(Twin):
    name, what, fix = "final_layer_norm", "with a layer norm after the last block", "this model has no final layer norm: the head takes the last block's output"

    def final(self, x: Tensor) -> Tensor:
        return self.layer_norm(x)


# -- embedding, selection, head -------------------------------------------------------------------
class MissingPositions(Twin):
    name, what, fix = "missing_pos_embed", "without the position embeddings", "x = w_emb[input_ids] + pos_embed"

    def embed(self, input_ids: Tensor, w_emb: Tensor, pos_embed: Tensor) -> Tensor:
        return w_emb[input_ids]


class MaskGreaterEqual(Twin):
    name, what, fix = "mask_greater_equal", "selecting mask_indicator >= 0.5", "select mask_indicator > 0.5, strictly: 0.5 itself is not selected"

    def gather(self, x: Tensor, mask_indicator: Tensor) -> Tensor:
        return x[mask_indicator >= mlm.MASK_THRESHOLD]


class MaskNonzero(Twin):
    name, what, fix = "mask_nonzero", "selecting every nonzero mask value", "select mask_indicator > 0.5: values are not only 0 and 1"

    def gather(self, x: Tensor, mask_indicator: Tensor) -> Tensor:
        return x[mask_indicator != 0]


class MaskPositive(Twin):
    name, what, fix = "mask_positive", "selecting mask_indicator > 0", "select mask_indicator > 0.5"

    def gather(self, x: Tensor, mask_indicator: Tensor) -> Tensor:
        return x[mask_indicator > 0]


class ColumnMajorGather(Twin):
    name, what, fix = "column_major_gather", "with the selected rows in (t, n) order", "keep row-major (n, t) order: all selected positions of sequence 0 first"

    def gather(self, x: Tensor, mask_indicator: Tensor) -> Tensor:
        return x.transpose(0, 1)[mask_indicator.T > mlm.MASK_THRESHOLD]


class AllPositions(Twin):
    name, what, fix = "all_positions", "scoring every position instead of the masked ones", "select the rows where mask_indicator > 0.5 before the head"

    def gather(self, x: Tensor, mask_indicator: Tensor) -> Tensor:
        return x.reshape(-1, x.shape[-1])


class NoHead(Twin):
    name, what, fix = "no_head", "without the tied head (the hidden states themselves)", "finish with logits = rows @ w_emb.T, shape (M, vocab_size)"

    def head(self, rows: Tensor, w_emb: Tensor) -> Tensor:
        return rows


# -- gradient only: the logits are the reference's ------------------------------------------------
class DetachedHead(Twin):
    name, what, gradient_only = "detached_head", "with a head that uses a detached copy of w_emb (no head term in w_emb's gradient)", True
    fix = "compute logits = rows @ w_emb.T with w_emb itself"

    def head(self, rows: Tensor, w_emb: Tensor) -> Tensor:
        return rows @ w_emb.detach().T


class DetachedLookup(Twin):
    name, what, gradient_only = "detached_lookup", "with the embedding looked up in a detached copy of w_emb (no lookup term in its gradient)", True
    fix = "look up w_emb[input_ids] in w_emb itself"

    def embed(self, input_ids: Tensor, w_emb: Tensor, pos_embed: Tensor) -> Tensor:
        return w_emb.detach()[input_ids] + pos_embed


class DetachedAttentionWeights(Twin):
    name, what, gradient_only = "detached_attention_weights", "with the attention weights detached (no gradient through the softmax)", True
    fix = "keep the softmax on the autograd graph: no .detach() inside the blocks"

    def softmax(self, scores: Tensor) -> Tensor:
        return mlm.softmax(scores).detach()


class DetachedResult(Twin):
    name, what, gradient_only = "detached_result", "with its result cut off from autograd (no gradient reaches any input)", True
    fix = "keep the result on the autograd graph: no torch.no_grad(), .detach(), .numpy() or .item()"

    def __call__(self, *args: Tensor | int, **kwargs: Tensor | int) -> Tensor:
        return super().__call__(*args, **kwargs).detach()


# Most common first: when two twins agree on every failing case, the first one is named.
MISTAKES: tuple[Twin, ...] = (
    NoScoreScaling(),
    ScaleByDModel(),
    ScaleByDHead(),
    SoftmaxOverQueries(),
    InterleavedHeads(),
    OutputWeightsTransposed(),
    KeysFromQueryWeights(),
    ValuesFromKeyWeights(),
    CausalMask(),
    NaiveSoftmax(),
    SoftmaxShiftByMean(),
    WeightsTransposed(),
    UnbiasedVariance(),
    EpsOutsideRoot(),
    *(EpsValue(eps) for eps in (1e-6, 1e-12, 1e-8, 1e-4)),  # 1e-12 also stands for no eps: no case tells them apart
    Float32Eps(),
    NoLayerNorm(),
    GeluErf(),
    *_gelu_typos(),
    Relu(),
    NoGelu(),
    GeluAfterSecondMatmul(),
    PostLayerNorm(),
    NoAttentionResidual(),
    NoFeedForwardResidual(),
    ResidualFromNormalized(),
    BothResidualsFromNormalized(),
    ParallelSublayers(),
    FirstBlockOnly(),
    BlocksReversed(),
    FinalLayerNorm(),
    MissingPositions(),
    MaskGreaterEqual(),
    MaskNonzero(),
    MaskPositive(),
    ColumnMajorGather(),
    AllPositions(),
    NoHead(),
    DetachedHead(),
    DetachedLookup(),
    DetachedAttentionWeights(),
    DetachedResult(),
)
