"""The reference, validated against implementations that are not itself."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from grader.cases import make_cases
from grader.spec import ROOT, load_spec
from reference.mlm_forward_tied.oracle import numpy_forward  # an independent float64 NumPy implementation, written from the statement
from reference.mlm_forward_tied.reference import encode, encoder_block, mlm_forward_tied

CASES = make_cases(load_spec(), "reference-validation")


# -- a composition of PyTorch's own modules with the same weights ---------------------------------
def torch_modules_forward(ids, emb, pos, blocks, mask, heads):
    d = emb.shape[1]
    norm = nn.LayerNorm(d, eps=1e-5, elementwise_affine=False, dtype=emb.dtype)
    x = F.embedding(ids, emb) + pos
    for wq, wk, wv, wo, w1, w2 in blocks:
        mha = nn.MultiheadAttention(d, heads, bias=False, batch_first=True, dtype=emb.dtype)
        with torch.no_grad():  # nn.Linear stores (out, in): our (in, out) weights transposed
            mha.in_proj_weight.copy_(torch.cat([wq.T, wk.T, wv.T]))
            mha.out_proj.weight.copy_(wo.T)
        h = norm(x)
        x = x + mha(h, h, h, need_weights=False)[0]
        x = x + F.gelu(norm(x) @ w1, approximate="tanh") @ w2
    return x[mask > 0.5] @ emb.T


def as64(case):
    return {k: v.double() if v.is_floating_point() else v for k, v in case.inputs.items()}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_matches_numpy_float64_implementation(case):
    inputs = as64(case)
    ours = mlm_forward_tied(**inputs, num_heads=case.args["num_heads"]).numpy()
    theirs = numpy_forward(*(inputs[k].numpy() for k in inputs), case.args["num_heads"])
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12 * max(1.0, np.abs(theirs).max(initial=0)))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_matches_pytorch_modules(case):
    inputs = as64(case)
    with torch.no_grad():
        ours = mlm_forward_tied(**inputs, num_heads=case.args["num_heads"])
        theirs = torch_modules_forward(*inputs.values(), case.args["num_heads"])
    torch.testing.assert_close(ours, theirs, rtol=1e-10, atol=1e-10 * max(1.0, theirs.abs().max().item() if theirs.numel() else 0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_output_dtype_follows_input(dtype):
    case = CASES[0]
    inputs = {k: v.to(dtype) if v.is_floating_point() else v for k, v in case.inputs.items()}
    assert mlm_forward_tied(**inputs, num_heads=case.args["num_heads"]).dtype == dtype


def test_permuting_the_batch_permutes_the_rows():
    case = next(c for c in CASES if c.shape["N"] >= 3 and c.dtype == "float64")
    inputs = as64(case)
    perm = torch.tensor([2, 0, 1] + list(range(3, case.shape["N"])))
    permuted = dict(inputs, input_ids=inputs["input_ids"][perm], mask_indicator=inputs["mask_indicator"][perm])
    out = mlm_forward_tied(**inputs, num_heads=case.args["num_heads"])
    out_permuted = mlm_forward_tied(**permuted, num_heads=case.args["num_heads"])
    # rows are grouped by sequence in row-major order: regroup them to compare
    counts = (inputs["mask_indicator"] > 0.5).sum(1).tolist()
    groups = list(out.split(counts))
    torch.testing.assert_close(out_permuted, torch.cat([groups[i] for i in perm.tolist()]))


def test_no_blocks_is_embedding_times_embedding_transposed():
    case = next(c for c in CASES if c.shape["B"] == 0)
    e, p, ids, mask = (as64(case)[k] for k in ("w_emb", "pos_embed", "input_ids", "mask_indicator"))
    expected = ((e[ids] + p) @ e.T)[mask > 0.5]
    torch.testing.assert_close(mlm_forward_tied(**as64(case), num_heads=case.args["num_heads"]), expected)


def test_no_masked_position_gives_empty_rows():
    case = next(c for c in CASES if c.shape["M"] == 0)
    out = mlm_forward_tied(**case.inputs, num_heads=case.args["num_heads"])
    assert out.shape == (0, case.shape["V"])


@pytest.mark.parametrize("case", [c for c in CASES if c.shape["M"] > 0][:8], ids=lambda c: c.name)
def test_gradient_into_embedding_is_head_term_plus_lookup_term(case):
    inputs = as64(case)
    e = inputs["w_emb"].requires_grad_(True)
    upstream = case.grad_output.double()
    out = mlm_forward_tied(**inputs, num_heads=case.args["num_heads"])
    (autograd_grad,) = torch.autograd.grad(out, e, upstream)

    # Analytic: the head term uses the hidden states; the lookup term scatters the input gradient.
    ids, mask = inputs["input_ids"], inputs["mask_indicator"]
    x0 = (e.detach()[ids] + inputs["pos_embed"]).requires_grad_(True)
    hidden = encode_from(x0, inputs["blocks_weights"], case.args["num_heads"])[mask > 0.5]  # (M, D)
    head_term = upstream.T @ hidden.detach()  # (V, D), dense
    (input_grad,) = torch.autograd.grad(hidden, x0, upstream @ e.detach())
    lookup_term = torch.zeros_like(e).index_add_(0, ids.reshape(-1), input_grad.reshape(-1, e.shape[1]))
    torch.testing.assert_close(autograd_grad, head_term + lookup_term, rtol=1e-10, atol=1e-12)


def encode_from(x0, blocks_weights, num_heads):
    """The blocks alone, applied to given input vectors."""
    x = x0
    for weights in blocks_weights:
        x = encoder_block(x, weights, num_heads)
    return x


def test_encode_is_embedding_then_blocks():
    case = CASES[1]
    inputs = as64(case)
    x0 = inputs["w_emb"][inputs["input_ids"]] + inputs["pos_embed"]
    torch.testing.assert_close(
        encode(inputs["input_ids"], inputs["w_emb"], inputs["pos_embed"], inputs["blocks_weights"], case.args["num_heads"]),
        encode_from(x0, inputs["blocks_weights"], case.args["num_heads"]),
    )


def test_worked_example_in_the_statement():
    w_emb = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64, requires_grad=True)
    args = dict(
        input_ids=torch.tensor([[2, 0]]),
        w_emb=w_emb,
        pos_embed=torch.tensor([[0.0, 0.0], [0.5, -0.5]], dtype=torch.float64),
        blocks_weights=torch.zeros(0, 6, 2, 2, dtype=torch.float64),
        mask_indicator=torch.tensor([[0.2, 0.9]], dtype=torch.float64),
        num_heads=1,
    )
    out = mlm_forward_tied(**args)
    assert out.tolist() == [[1.5, -0.5, 1.0]]
    (grad,) = torch.autograd.grad(out, w_emb, torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64))
    assert grad.tolist() == [[2.5, -0.5], [0.0, 0.0], [0.0, 0.0]]
    statement = (ROOT / "problem" / "mlm-forward-tied" / "README.md").read_text()
    assert "[[1.5, -0.5, 1.0]]" in statement and "[[2.5, -0.5], [0.0, 0.0], [0.0, 0.0]]" in statement
