"""One decoding step with a key-value cache: one case's arguments from its settings.

Settings: B, H, d (head width), T (cached positions, 0 for the first token); x ~ N(0, 1), w_qkv and
w_o ~ N(0, 1 / D), the caches ~ cache_scale * N(0, 1); qk_gain scales the query and key columns of
w_qkv and the cached keys, so that scores grow about as qk_gain**2 (peaked attention); min_score, when
set, scales them further until some score reaches it. The upstream gradients, one per output, are N(0, 1).
"""

import numpy as np
import torch

from grader.case import Drawn


def _largest_score(x: np.ndarray, w_qkv: np.ndarray, k_cache: np.ndarray, heads: int) -> float:
    b, width = x.shape
    d = width // heads
    qkv = x @ w_qkv
    q = qkv[:, :width].reshape(b, heads, d)
    k = qkv[:, width : 2 * width].reshape(b, heads, 1, d)
    keys = np.concatenate([k_cache, k], axis=2)
    return float(np.einsum("bhd,bhtd->bht", q, keys).max() / np.sqrt(d))


def draw(settings: dict, rng: np.random.Generator) -> Drawn:
    b, h, d, t = (int(settings[k]) for k in ("B", "H", "d", "T"))
    width = h * d
    dtype = np.dtype(settings["dtype"])
    x = rng.standard_normal((b, width))
    w_qkv = rng.standard_normal((width, 3 * width)) / np.sqrt(width)
    w_o = rng.standard_normal((width, width)) / np.sqrt(width)
    k_cache = settings["cache_scale"] * rng.standard_normal((b, h, t, d))
    v_cache = settings["cache_scale"] * rng.standard_normal((b, h, t, d))
    gain = settings["qk_gain"]
    w_qkv[:, : 2 * width] *= gain
    k_cache *= gain
    if settings["min_score"]:
        largest = _largest_score(x, w_qkv, k_cache, h)
        if largest < settings["min_score"]:
            grow = np.sqrt(settings["min_score"] / max(largest, 1e-6))
            w_qkv[:, : 2 * width] *= grow
            k_cache *= grow
    upstream = (rng.standard_normal((b, width)), rng.standard_normal((b, h, t + 1, d)), rng.standard_normal((b, h, t + 1, d)))

    def tensor(array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array.astype(dtype)))

    return Drawn(
        args={"x": tensor(x), "w_qkv": tensor(w_qkv), "w_o": tensor(w_o), "k_cache": tensor(k_cache), "v_cache": tensor(v_cache), "num_heads": h},
        shape={"B": b, "H": h, "d": d, "T": t},
        upstream=tuple(tensor(u) for u in upstream),
    )
