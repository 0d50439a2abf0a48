"""One case's arguments, drawn from its settings (problem/mlm-forward/problem.toml).

The encoder's arrays are drawn exactly as the tied challenge draws them
(reference/mlm_forward_tied/generate.py: shapes N, T, H, d_head, B, V; emb_std, qk_gain, out_gain,
mlp_gain, mask, mask_prob, min_score). Then, from the same stream, the head w_head (D, V), drawn
independently of w_emb with std head_gain / sqrt(D), so that a head built from w_emb (w_emb.T, the
tied head) gives other logits in every case; then the upstream gradient (M, V). The order of the
draws fixes the data: encoder inputs, w_head, grad_output.
"""

from typing import Any

import numpy as np
import torch

from grader.case import Drawn
from reference.mlm_forward_tied.generate import encoder_inputs, tensors
from reference.mlm_forward_tied.reference import MASK_THRESHOLD


def head(s: dict[str, Any], rng: np.random.Generator, d: int, v: int) -> np.ndarray:
    """w_head (D, V): N(0, (head_gain / sqrt(D))^2), in the case's dtype, independent of w_emb."""
    return rng.normal(0.0, s["head_gain"] / np.sqrt(d), (d, v)).astype(np.dtype(s["dtype"]))


def draw(s: dict[str, Any], rng: np.random.Generator) -> Drawn:
    arrays = encoder_inputs(s, rng)
    n, t = arrays["input_ids"].shape
    v, d = arrays["w_emb"].shape
    w_head = head(s, rng, d, v)
    m = int((arrays["mask_indicator"] > MASK_THRESHOLD).sum())
    grad_output = rng.normal(0.0, 1.0, (m, v)).astype(np.dtype(s["dtype"]))
    return Drawn(
        args=tensors(arrays | {"w_head": w_head}) | {"num_heads": s["H"]},
        shape={"N": n, "T": t, "D": d, "H": s["H"], "B": arrays["blocks_weights"].shape[0], "V": v, "M": m},
        upstream=(torch.from_numpy(grad_output),),
    )
