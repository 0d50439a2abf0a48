"""The static forbidden-API check: catches every route, names it, and never flags honest code."""

import ast
import textwrap

import pytest

from grader.policy import check
from grader.spec import load_spec

POLICY = load_spec().policy


def violations(source: str) -> list[str]:
    source = textwrap.dedent(source)
    return [str(v) for v in check(ast.parse(source), source, POLICY)]


@pytest.mark.parametrize(
    "source, named",
    [
        ("import torch\ny = torch.softmax(x, -1)", "torch.softmax"),
        ("import torch as t\ny = t.nn.functional.gelu(x)", "torch.nn.functional.gelu"),
        ("from torch import softmax as s\ny = s(x, 0)", "torch.softmax"),
        ("from torch.nn import functional as F", "import from torch.nn"),
        ("import torch\nF = torch.nn.functional\ny = F.layer_norm(x, (4,))", "torch.nn.functional.layer_norm"),
        ("import torch\ny = getattr(torch, 'layer_norm')", "torch.layer_norm"),
        ("import torch\ny = getattr(torch, name)", "getattr with a computed attribute name"),
        ("import functools, torch\ny = functools.reduce(getattr, ['nn'], torch)", "getattr may only be called directly"),
        ("y = __import__('torch')", "__import__"),
        ("import importlib", "import of importlib"),
        ("exec('y = 1')", "the built-in exec"),
        ("import torch\ny = torch.ops.aten._softmax(x, -1, False)", "torch.ops"),
        ("import torch\ny = torch._C._nn.gelu(x)", "torch._C"),
        ("import torch\ny = torch.__dict__['softmax']", "torch.__dict__"),
        ("y = x.softmax(-1)", ".softmax"),
        ("y = x.__class__", "__class__"),
        ("import torch\ny = torch.group_norm(x, 1)", "torch.group_norm"),
        ("import torch\ny = torch.native_batch_norm", "torch.native_batch_norm"),
        ("import torch\ny = torch.exp(torch.log_softmax(x, -1))", "torch.log_softmax"),
        ("import torch\ny = torch.rms_norm(x, (4,))", "torch.rms_norm"),
        ("from torch import nn\nlayer = nn.TransformerEncoderLayer(4, 2)", "torch.nn.TransformerEncoderLayer"),
        ("import torch\ny = torch.os.system('true')", "torch.os"),
        ("import numpy as np\nnp.save('f', x)", "numpy.save"),
        ("import torch\ntorch.save(x, 'f')", "torch.save"),
        ("from torch import *", "import *"),
        ("import operator\nf = operator.methodcaller('softmax', -1)", "operator.methodcaller"),
        ("import os", "import of os"),
        ("import torch\nfrom torch import special\ny = special.softmax(x, 0)", "torch.special.softmax"),
        ("import torch\ntorch.utils.checkpoint", "torch.utils"),
        ("y = open('/etc/passwd').read()", "the built-in open"),
    ],
)
def test_each_route_is_flagged_and_named(source, named):
    found = violations(source)
    assert any(named in v for v in found), found
    assert all(v.startswith("line ") for v in found)


def test_every_violation_is_reported_at_once_in_source_order():
    found = violations(
        """
        import torch
        import os
        def f(x):
            a = torch.softmax(x, -1)
            return torch.gelu(a) + x.layer_norm()
        """
    )
    assert [v.split(":")[0] for v in found] == ["line 3", "line 5", "line 6", "line 6"]
    assert "write the softmax with exp and sum" in found[1]


@pytest.mark.parametrize(
    "source",
    [
        "def softmax(x):\n    return x\ny = softmax(3)",
        "def layer_norm(x):\n    return x\ndef gelu(x):\n    return x\ny = gelu(layer_norm(1))",
        "class Net:\n    def __init__(self):\n        super().__init__()\n"
        "    def softmax(self, x):\n        return x\n    def go(self, x):\n        return self.softmax(x)",
        "def f(input, vars):\n    return input + vars",
        "import torch\ny = torch.linalg.norm(x) + torch.special.expit(x) + torch.autograd.grad",
        "import math\nimport numpy as np\ny = math.sqrt(2 / math.pi) + np.random.default_rng(0).normal()",
        "from collections import defaultdict\nfrom dataclasses import dataclass\nfrom typing import Optional\nimport functools, itertools",
        "from __future__ import annotations\nimport torch\ny = torch.logsumexp(x, -1) - torch.amax(x, -1) + torch.var_mean(x, correction=0)[0]",
        "import torch\ny = getattr(x, 'shape')\nz = hasattr(x, 'grad')",
        "if __name__ == '__main__':\n    pass",
        "import torch\ny = torch.einsum('ij,jk->ik', a, b).tanh().erf().rsqrt()",
    ],
)
def test_honest_code_is_not_flagged(source):
    assert violations(source) == []
