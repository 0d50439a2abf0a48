"""The runtime guard: each layer sees what it is there for, and honest operations pass."""

import pytest
import torch
import torch.nn.functional as F

from grader.child.guard import ForbiddenAPIError, Guard, _FunctionWatch, _OperatorWatch
from grader.spec import load_spec

POLICY = load_spec().policy
X = torch.randn(2, 3, 4)


def guard() -> Guard:
    return Guard(POLICY["forbidden_functions"], POLICY["forbidden_operators"], "/nonexistent/submission.py")


@pytest.mark.parametrize(
    "route, operator",
    [
        (lambda: torch.ops.aten._softmax(X, -1, False), "aten._softmax"),
        (lambda: torch._C._nn.gelu(X), "aten.gelu"),
        (lambda: F.layer_norm(X, (4,)), "aten.native_layer_norm"),
        (lambda: F.group_norm(X, 1), "aten.native_group_norm"),
        (lambda: F.batch_norm(X, None, None, training=True), "batch_norm"),
        (lambda: F.scaled_dot_product_attention(X, X, X), "aten._safe_softmax"),  # its CPU math path
        (lambda: torch.exp(X.log_softmax(-1)), "aten._log_softmax"),
        (lambda: torch.nn.Softmax(dim=-1)(X), "aten._softmax"),
    ],
)
def test_operator_layer_sees_forbidden_operators_by_any_route(route, operator):
    g = guard()
    with pytest.raises(ForbiddenAPIError), _OperatorWatch(g):
        route()
    assert any(operator in found for found in g.found), g.found


def test_function_layer_sees_what_decomposes_into_honest_operators():
    # rms_norm runs as pow/mean/rsqrt/mul: no operator reveals it, only its name does
    g = guard()
    with _OperatorWatch(g):
        torch.rms_norm(X - X.mean(-1, keepdim=True), (4,))
    assert g.found == []
    with pytest.raises(ForbiddenAPIError), _FunctionWatch(g):
        torch.rms_norm(X, (4,))
    assert g.found == ["the function torch.rms_norm"]


def test_tensor_methods_are_named():
    g = guard()
    with pytest.raises(ForbiddenAPIError), g.watching():
        X.softmax(-1)
    assert g.found == ["the Tensor method .softmax"]


def test_a_swallowed_refusal_is_still_recorded():
    g = guard()
    with g.watching():
        try:
            torch.softmax(X, -1)
        except ForbiddenAPIError:
            pass
    assert g.found


def test_honest_operations_and_their_backward_pass():
    g = guard()
    w = torch.randn(4, 4, requires_grad=True)
    with g.watching():
        s = X @ w
        mean = s.mean(-1, keepdim=True)
        h = (s - mean) / torch.sqrt(s.var(-1, unbiased=False, keepdim=True) + 1e-5)
        p = torch.exp(h - torch.logsumexp(h, -1, keepdim=True))
        q = torch.einsum("nij,nkj->nik", p, h).tanh().amax(-1)
        torch.autograd.grad(q.sum(), w)
    assert g.found == []
