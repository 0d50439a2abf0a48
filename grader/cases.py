"""Test cases, drawn deterministically from a seed: the same seed always gives the same cases.

Public cases come from the spec's public seed; hidden cases from the grader's secret seed. Each
case has its own random stream (seed + case name), so adding a case never changes the others.
"""

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from grader.spec import CaseTemplate, Spec, hidden_module

INPUT_NAMES = ("input_ids", "w_emb", "pos_embed", "blocks_weights", "mask_indicator")
DIFFERENTIABLE_INPUTS = ("w_emb", "pos_embed", "blocks_weights")
DTYPES = {"float32": torch.float32, "float64": torch.float64}
SHAPE_KEYS = ("N", "T", "H", "d_head", "B", "V")
BLOCK_MATRICES = ("w_q", "w_k", "w_v", "w_o", "w_mlp1", "w_mlp2")  # the order within blocks_weights[i]


@dataclass(frozen=True)
class Drawn:
    """One case's arguments, as a problem package's generator draws them (docs/problem-packages.md)."""

    args: dict[str, Any]  # every parameter by name, in any order: torch tensors and Python scalars
    shape: dict[str, int]  # what a report shows of the case's size ("N=2 T=4")
    upstream: tuple[Tensor, ...] = ()  # the gradient check's upstream gradient, one per output


@dataclass
class Case:
    name: str
    family: str
    public: bool
    dtype: str  # "float32" or "float64"
    num_heads: int
    inputs: dict[str, Tensor]  # keyed by INPUT_NAMES
    grad_output: Tensor  # (M, V) upstream gradient for the gradient check

    @property
    def shape(self) -> dict[str, int]:
        n, t = self.inputs["input_ids"].shape
        v, d = self.inputs["w_emb"].shape
        return {
            "N": n,
            "T": t,
            "D": d,
            "H": self.num_heads,
            "B": self.inputs["blocks_weights"].shape[0],
            "V": v,
            "M": self.grad_output.shape[0],
        }

    def request(self) -> tuple[dict[str, Any], dict[str, Tensor]]:
        """The frame the child answers: which inputs, in call order, and which get gradients."""
        header = {
            "kind": "case",
            "name": self.name,
            "num_heads": self.num_heads,
            "inputs": list(INPUT_NAMES),
            "differentiable": list(DIFFERENTIABLE_INPUTS),
        }
        return header, self.inputs | {"grad_output": self.grad_output}

    def shape_text(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.shape.items())


def _rng(seed: str, case_name: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}/{case_name}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


def _draw(rng: np.random.Generator, value: Any) -> Any:
    """A fixed value stays; [low, high] is drawn uniformly (inclusive for integers); a list of
    strings is a choice."""
    if not isinstance(value, list):
        return value
    if all(isinstance(v, str) for v in value):
        return str(rng.choice(value))
    low, high = value
    if isinstance(low, int) and isinstance(high, int):
        return int(rng.integers(low, high + 1))
    return float(rng.uniform(low, high))


def _soft_mask(rng: np.random.Generator, n: int, t: int, dtype: np.dtype) -> np.ndarray:
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


def _mask(rng: np.random.Generator, kind: str, prob: float, n: int, t: int, dtype: np.dtype) -> np.ndarray:
    if kind == "none":
        return np.zeros((n, t), dtype)
    if kind == "all":
        return np.ones((n, t), dtype)
    if kind == "soft":
        return _soft_mask(rng, n, t, dtype)
    mask = (rng.random((n, t)) < prob).astype(dtype)
    if not mask.any():  # a binary case always has something to predict
        mask[rng.integers(n), rng.integers(t)] = 1
    return mask


def _largest_first_block_score(x0: np.ndarray, w_q: np.ndarray, w_k: np.ndarray, heads: int) -> float:
    """Largest attention score of the first block, in float64, as the reference computes it."""
    reference = hidden_module("reference.mlm")  # here only: the candidate's kit holds this module, not the reference
    attention_scores, layer_norm = reference.attention_scores, reference.layer_norm

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


def make_case(template: CaseTemplate, seed: str, threshold: float) -> Case:
    rng = _rng(seed, template.name)
    s = {key: _draw(rng, value) for key, value in sorted(template.settings.items())}
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
        largest = _largest_first_block_score(w_emb[input_ids] + pos_embed, blocks[0, 0], blocks[0, 1], h)
        if largest < s["min_score"]:
            blocks[0, 0] *= dtype.type(1.5 * s["min_score"] / max(largest, 1e-3))
    apply_probe(blocks, s.get("zero", ""), s.get("symmetric", False))
    mask = _mask(rng, s["mask"], s["mask_prob"], n, t, dtype)
    m = int((mask > threshold).sum())
    grad_output = normal(1.0, m, v)

    arrays = {"input_ids": input_ids, "w_emb": w_emb, "pos_embed": pos_embed, "blocks_weights": blocks, "mask_indicator": mask}
    return Case(
        name=template.name,
        family=template.family,
        public=s["visibility"] == "public",
        dtype=s["dtype"],
        num_heads=h,
        inputs={name: torch.from_numpy(np.ascontiguousarray(arrays[name])) for name in INPUT_NAMES},
        grad_output=torch.from_numpy(grad_output),
    )


def make_cases(spec: Spec, hidden_seed: str, public_only: bool = False) -> list[Case]:
    """Public cases first (from the public seed), then hidden ones (from hidden_seed)."""
    cases = []
    for template in spec.templates:
        public = template.settings["visibility"] == "public"
        if public or not public_only:
            seed = spec.public_seed if public else hidden_seed
            cases.append(make_case(template, seed, spec.mask_threshold))
    cases.sort(key=lambda case: not case.public)
    return cases
