"""One case's arguments, drawn from its settings (problem/mlm-forward-tied/problem.toml).

Shapes: N sequences, T positions, H heads, d_head, B blocks, V vocabulary. emb_std is the std of
w_emb and pos_embed; qk_gain scales w_q and w_k, out_gain w_o and w_mlp2, mlp_gain w_mlp1; mask is
"binary", "soft", "none" or "all"; min_score, zero and symmetric shape the probe and large-magnitude
cases. The untied challenge (reference/mlm_forward/) draws its encoder here too.
"""

from typing import Any

import numpy as np
import torch

from grader.case import Drawn
from reference.mlm_forward_tied.reference import MASK_THRESHOLD, attention_scores, layer_norm

PARAMETERS = ("input_ids", "w_emb", "pos_embed", "blocks_weights", "mask_indicator")
SHAPE_KEYS = ("N", "T", "H", "d_head", "B", "V")
BLOCK_MATRICES = ("w_q", "w_k", "w_v", "w_o", "w_mlp1", "w_mlp2")  # the order within blocks_weights[i]


def soft_mask(rng: np.random.Generator, n: int, t: int, dtype: np.dtype) -> np.ndarray:
    """Values around the 0.5 threshold: exactly 0.5 and its neighbours in the case's dtype (in
    float64 they become 0.5 when cast to float32), values in (0, 1), below 0 and above 1, so every
    wrong selection rule picks a different set."""
    half = dtype.type(0.5)
    must_have = [
        half,
        np.nextafter(half, dtype.type(1)),
        np.nextafter(half, dtype.type(0)),
        0.3, 0.7, 1.3, -0.2, -0.7,
    ]  # fmt: skip
    if n * t < len(must_have):
        raise ValueError(f"a soft mask needs at least {len(must_have)} positions to hold its values; N * T = {n * t}")
    values = rng.uniform(-0.8, 1.8, n * t).astype(dtype)
    slots = rng.permutation(n * t)[: len(must_have)]
    values[slots] = np.array(must_have, dtype=dtype)
    return values.reshape(n, t)


def mask(rng: np.random.Generator, kind: str, prob: float, n: int, t: int, dtype: np.dtype) -> np.ndarray:
    if kind == "none":
        return np.zeros((n, t), dtype)
    if kind == "all":
        return np.ones((n, t), dtype)
    if kind == "soft":
        return soft_mask(rng, n, t, dtype)
    drawn = (rng.random((n, t)) < prob).astype(dtype)
    if not drawn.any():  # a binary case always has something to predict
        drawn[rng.integers(n), rng.integers(t)] = 1
    return drawn


def largest_first_block_score(x0: np.ndarray, w_q: np.ndarray, w_k: np.ndarray, heads: int) -> float:
    """Largest attention score of the first block, in float64, as the reference computes it."""
    x, q, k = (torch.from_numpy(a).double() for a in (x0, w_q, w_k))
    return attention_scores(layer_norm(x), q, k, heads).max().item()


def apply_probe(blocks: np.ndarray, zero: str, symmetric: bool) -> None:
    """Probe cases switch parts of every block off or make them trivial, in place: the matrices
    named in `zero` become 0 (w_o: no attention; w_mlp2: no feed-forward; w_q: all scores equal),
    and `symmetric` makes every matrix its own transpose, so x @ W and x @ W.T agree."""
    for name in zero.split():
        blocks[:, BLOCK_MATRICES.index(name)] = 0
    if symmetric:
        blocks[...] = (blocks + blocks.swapaxes(-1, -2)) / 2


def encoder_inputs(s: dict[str, Any], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The encoder's arrays (PARAMETERS), in the order the values are drawn."""
    dtype = np.dtype(s["dtype"])
    n, t, h, d_head, b, v = (s[k] for k in SHAPE_KEYS)
    d = h * d_head

    def normal(std: float, *shape: int) -> np.ndarray:
        return rng.normal(0.0, std, shape).astype(dtype)

    input_ids = rng.integers(0, v, (n, t), dtype=np.int64)
    w_emb = normal(s["emb_std"], v, d)
    pos_embed = normal(s["emb_std"], t, d)
    gains = [s["qk_gain"], s["qk_gain"], 1.0, s["out_gain"], s["mlp_gain"], s["out_gain"]]
    blocks = np.stack([normal(g / np.sqrt(d), b, d, d) for g in gains], axis=1) if b else np.zeros((0, 6, d, d), dtype)
    if s.get("min_score") and b:  # guarantee the family's promise: scale w_q until a score is that large
        largest = largest_first_block_score(w_emb[input_ids] + pos_embed, blocks[0, 0], blocks[0, 1], h)
        if largest < s["min_score"]:
            blocks[0, 0] *= dtype.type(1.5 * s["min_score"] / max(largest, 1e-3))
    apply_probe(blocks, s.get("zero", ""), s.get("symmetric", False))
    drawn_mask = mask(rng, s["mask"], s["mask_prob"], n, t, dtype)
    return {"input_ids": input_ids, "w_emb": w_emb, "pos_embed": pos_embed, "blocks_weights": blocks, "mask_indicator": drawn_mask}


def tensors(arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {name: torch.from_numpy(np.ascontiguousarray(array)) for name, array in arrays.items()}


def draw(s: dict[str, Any], rng: np.random.Generator) -> Drawn:
    arrays = encoder_inputs(s, rng)
    n, t = arrays["input_ids"].shape
    v, d = arrays["w_emb"].shape
    m = int((arrays["mask_indicator"] > MASK_THRESHOLD).sum())
    grad_output = rng.normal(0.0, 1.0, (m, v)).astype(np.dtype(s["dtype"]))
    return Drawn(
        args=tensors(arrays) | {"num_heads": s["H"]},
        shape={"N": n, "T": t, "D": d, "H": s["H"], "B": arrays["blocks_weights"].shape[0], "V": v, "M": m},
        upstream=(torch.from_numpy(grad_output),),
    )
