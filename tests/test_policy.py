"""The static forbidden-API check: catches every route, names it, and never flags honest code."""

import ast
import codecs
import textwrap

import pytest

from grader.judge import Rejection, read_source
from grader.policy import check, explain
from grader.results import Verdict
from grader.spec import load_spec

RULES = load_spec().rules


def violations(source: str) -> list[str]:
    source = textwrap.dedent(source)
    return [str(v) for v in check(ast.parse(source), source, RULES)]


@pytest.mark.parametrize(
    "source, named",
    [
        ("import torch\ny = torch.softmax(x, -1)", "torch.softmax"),
        ("import torch as t\ny = t.nn.functional.gelu(x)", "torch.nn is forbidden (anything of torch.nn"),
        ("from torch import softmax as s\ny = s(x, 0)", "torch.softmax"),
        ("from torch.nn import functional as F", "import from torch.nn"),
        ("import torch\nF = torch.nn.functional\ny = F.layer_norm(x, (4,))", "`torch.nn`: torch.nn is forbidden"),
        ("import torch\ny = getattr(torch, 'layer_norm')", "torch.layer_norm"),
        ("y = __import__('torch')", "__import__"),
        ("import importlib", "import of importlib"),
        ("exec('y = 1')", "the built-in exec"),
        ("import torch\ny = torch.ops.aten._softmax(x, -1, False)", "torch.ops"),
        ("import torch\ny = torch._C._nn.gelu(x)", "torch._C"),
        ("import torch\ny = torch.__dict__['softmax']", "torch.__dict__"),
        ("y = x.softmax(-1)", ".softmax"),
        ("y = x.__dict__", "__dict__"),
        ("import torch\ny = torch.group_norm(x, 1)", "torch.group_norm"),
        ("import torch\ny = torch.native_batch_norm", "torch.native_batch_norm"),
        ("import torch\ny = torch.exp(torch.log_softmax(x, -1))", "torch.log_softmax"),
        ("import torch\ny = torch.rms_norm(x, (4,))", "torch.rms_norm"),
        ("from torch import nn\nlayer = nn.TransformerEncoderLayer(4, 2)", "`from torch import nn`: torch.nn is forbidden"),
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
        "import torch\ny = torch.linalg.norm(x) + torch.special.expit(x) + torch.autograd.Function",
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


def violations_at(source: str) -> list[tuple[int, str]]:
    source = textwrap.dedent(source)
    return [(v.line, str(v)) for v in check(ast.parse(source), source, RULES)]


# Routes from the allowed modules to forbidden functionality. Each case: the source, the line of
# the violation that must be reported, and what its message must say.
@pytest.mark.parametrize(
    "source, line, named",
    [
        # the pure-Python modules offer their functions, never the modules they import
        ("import typing\nsys = typing.sys\nF = sys.modules['torch.nn.functional']", 2, "typing.sys is a module outside the allowed list"),
        ("import dataclasses\nb = dataclasses.builtins.__dict__", 2, "dataclasses.builtins is a module outside the allowed list"),
        ("import dataclasses\nframe = dataclasses.inspect.currentframe()", 2, "dataclasses.inspect is a module outside the allowed list"),
        ("import enum\nmodules = enum.sys.modules", 2, "enum.sys is a module outside the allowed list"),
        ("from typing import sys", 1, "typing.sys is a module outside the allowed list"),
        ("import dataclasses\nb = getattr(dataclasses, 'builtins')", 2, "dataclasses.builtins"),
        # class and keyword patterns of match read attributes too
        (
            "import torch\nmatch x:\n    case object(softmax=sm):\n        y = sm(-1)",
            3,
            ".softmax is forbidden (softmax, log-softmax and softmin: write it yourself)",
        ),
        ("import torch\nmatch x:\n    case torch.Tensor(softmax=sm):\n        y = sm(-1)", 3, "torch.Tensor.softmax is forbidden"),
        ("match x:\n    case object(__dict__=d):\n        pass", 2, "special attribute __dict__"),
        # classes built at run time from a dict of names
        ("import torch\nT = type('T', (torch.Tensor,), {})", 2, "type() with more than one argument"),
        ("import abc\nT = abc.ABCMeta('T', (), {})", 2, "calling the metaclass abc.ABCMeta"),
        ("import enum, torch\nE = enum.Enum('E', names, type=torch.Tensor)", 2, "enum.Enum(name, members) builds a class"),
        (
            "import dataclasses, torch\nT = dataclasses.make_dataclass('T', [], bases=(torch.Tensor,), namespace=ns)",
            2,
            "dataclasses.make_dataclass is not on this challenge's allow-list",
        ),
        ("f = getattr(x, '__torch_function__')", 1, "special attribute __torch_function__"),
        ("import torch\nclass T(torch.Tensor):\n    def __torch_dispatch__(cls, func, types, args, kwargs):\n        pass", 3, "defining the special name"),
        # torch's own Python decompositions and operator objects
        ("import torch\nf = torch._decomp.decomposition_table", 2, "torch._decomp is a private part of torch"),
        ("import torch\ny = torch._refs.softmax(x, -1)", 2, "torch._refs is a private part of torch"),
        ("from torch._decomp import decomposition_table", 1, "import from torch._decomp is not allowed"),
        ("import torch\ny = torch.ops.aten.rms_norm.default(x, [4])", 2, "torch.ops is a module outside the allowed list"),
        # an operator packet, and a quantized kernel
        ("import torch\ny = torch.quantized_lstm.default", 2, "torch.quantized_lstm is not on this challenge's allow-list"),
        ("import torch\ny = torch.Graph", 2, "torch.Graph is not on this challenge's allow-list"),
        # files
        (
            "import torch\ns = torch.UntypedStorage.from_file('/proc/self/environ', False, 4096)",
            2,
            "torch.UntypedStorage is not on this challenge's allow-list",
        ),
        # ways around the runtime guard, code from strings, Python's machinery
        ("import torch\nwith torch.DisableTorchFunction():\n    pass", 2, "torch.DisableTorchFunction is not on this challenge's allow-list"),
        ("import torch\nfuture = torch.fork(f, x)", 2, "torch.fork is not on this challenge's allow-list"),
        ("import typing\nhints = typing.get_type_hints(f)", 2, "typing.get_type_hints is not on this challenge's allow-list"),
        ("import functools\nf = functools.singledispatch(g)", 2, "functools.singledispatch is not on this challenge's allow-list"),
        ("import torch\ng = torch.Graph()", 2, "torch.Graph is not on this challenge's allow-list"),
        # changing the allowed modules
        ("import torch\ntorch.exp = lambda t: t", 2, "changing torch.exp is forbidden"),
        ("import torch\nsetattr(torch.Tensor, 'exp', None)", 2, "changing torch.Tensor.exp is forbidden"),
        # names that the allowed modules do not offer
        ("import torch\ny = torch.foo", 2, "torch.foo is not on this challenge's allow-list"),
    ],
)
def test_each_route_to_forbidden_functionality_is_refused_at_its_line(source, line, named):
    found = violations_at(source)
    assert any(at == line and named in text for at, text in found), found


def test_every_violation_names_its_line_column_and_source_text():
    found = check(ast.parse("import torch\ny = torch.softmax(x, -1)"), "import torch\ny = torch.softmax(x, -1)", RULES)
    assert [(v.line, v.column, v.text) for v in found] == [(2, 5, "torch.softmax")]
    expected = "line 2:5: `torch.softmax`: torch.softmax is forbidden (softmax, log-softmax and softmin: write it yourself); "
    assert str(found[0]).startswith(expected + "write the softmax with exp")


@pytest.mark.parametrize(
    "source",
    [
        # the candidate's own methods may use the built-in names, called through any name
        "class Helper:\n    def softmax(self, x):\n        return x\n    def layer_norm(self, x):\n        return x\n"
        "    def gelu(self, x):\n        return x\nhelper = Helper()\ny = helper.gelu(helper.layer_norm(helper.softmax(1)))",
        # functions of the allowed submodules, imported by name
        "from torch.linalg import vector_norm\nfrom numpy.random import default_rng\ny = vector_norm(x, dim=-1) + default_rng(0).normal()",
        "import torch\nfrom torch import linalg\nla = torch.linalg\ny = linalg.norm(x) + la.vector_norm(x)",
        "import numpy.linalg as nla\nimport torch.linalg\ny = nla.svd(a).S + torch.linalg.svd(t).S",
        # methods and attributes of what torch, numpy and Python return
        "import torch\ny = x.cpu().contiguous().storage().size() + torch.finfo(x.dtype).eps + x.max(-1).values + x.mT.shape[0]",
        "import numpy as np\nrng = np.random.default_rng(0)\na = rng.random(3).copy()\nb = {'k': a}.copy().items()\nc = a.flags.writeable",
        "s = slice(1, 4)\nn = s.start + s.stop + (3.5).as_integer_ratio()[0] + 'a,b'.split(',').index('b')",
        # the candidate's own attributes: self.x, class attributes, dataclass and namedtuple fields, enums, properties
        "class Cache:\n    hits = 0\n    def __init__(self):\n        self._store = {}\n    def get(self, k):\n        self.hits += 1\n"
        "        return self._store.get(k)\n    @property\n    def size(self):\n        return len(self._store)\n    @size.setter\n"
        "    def size(self, v):\n        pass\nc = Cache()\ny = c.get(1), c.size, c.hits",
        "from dataclasses import dataclass, field\n@dataclass\nclass Block:\n    w_q: int\n    extra: list = field(default_factory=list)\ny = Block(1).w_q",
        "from collections import namedtuple\nfrom typing import NamedTuple\nP = namedtuple('P', 'left right')\nclass Q(NamedTuple):\n"
        "    top: int\ny = P(1, 2).left + Q(3).top",
        "import enum\nclass Kind(enum.Enum):\n    SOFT = 1\ny = Kind.SOFT.value + len(Kind.SOFT.name)",
        # a custom autograd function
        "import torch\nclass Cube(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        ctx.save_for_backward(x)\n"
        "        return x**3\n    @staticmethod\n    def backward(ctx, g):\n        (x,) = ctx.saved_tensors\n        return 3 * x * x * g\ny = Cube.apply(x)",
        # types as they are used honestly
        "import torch\nok = isinstance(x, torch.Tensor) and type(x).__name__ == 'Tensor'\ndef f(t: type[int]) -> type:\n    return t",
        "import functools\nimport torch\nrow_sum = functools.partial(torch.sum, dim=-1)\n@functools.lru_cache(maxsize=None)\ndef c(n):\n    return n\n"
        "@torch.no_grad()\ndef g(x):\n    return row_sum(x)\nc.cache_clear()",
        "class Net:\n    def __init__(self):\n        super().__init__()\n        self.scale = 2\n",
        # what the text alone cannot judge is left to the run-time checks on the objects
        "from collections import namedtuple\nfields = ['q', 'k']\nP = namedtuple('P', fields, defaults=(0,))\np = P._make([1, 2])\n"
        "y = p._asdict(), P._fields, p._replace(q=5)",
        "class Cache:\n    def __init__(self):\n        self._dtype = None\n    def _check(self):\n        return self._dtype\n"
        "    def compile(self):\n        return self._check()\n    def save(self, v):\n        return v",
        "import torch\nmatch x:\n    case torch.Tensor(shape=(n, t)):\n        y = type(x)(n, t)",
        "import torch\ny = torch.broadcast_shapes((2, 1), (1, 3))\nz = torch.vmap(torch.addr)",
        "if False:\n    y = x.not_a_real_attribute()\nname = 'w_' + str(1)\nw = getattr(self, name)",
        "import torch\nv = torch.__version__\nname = x.__class__.__name__\nn = x.__len__()",
        "import math, numpy\nlibs = [math, numpy]\nxp = numpy if True else math\ny = libs[0].sqrt(4.0)",
    ],
)
def test_honest_oddities_are_not_flagged(source):
    assert violations(source) == []


def test_a_long_generated_expression_is_checked_without_recursion():
    # y = torch.tanh(x * 0 + x * 1 + ... + x * 2999): a left-deep chain of 3000 terms, as the parser
    # builds it (built here directly: Python's own parser gives up before that depth)
    source = "import torch\ny = torch.tanh(x)\nz = y.softmax(-1)"
    tree = ast.parse(source)
    at = {"lineno": 2, "col_offset": 13, "end_lineno": 2, "end_col_offset": 14}
    expression: ast.expr = ast.Name("x", ast.Load(), **at)
    for i in range(1, 3000):
        term = ast.BinOp(ast.Name("x", ast.Load(), **at), ast.Mult(), ast.Constant(i, **at), **at)
        expression = ast.BinOp(expression, ast.Add(), term, **at)
    tree.body[1].value.args = [expression]
    found = check(tree, source, RULES)
    assert [(v.line, v.text) for v in found] == [(3, "y.softmax")]


def test_a_long_chain_of_aliases_resolves_in_any_order():
    # a_2999 = a_2998 ... a_1 = a_0, written in reverse order, a_0 = torch at the end
    lines = [f"a_{i} = a_{i - 1}" for i in range(2999, 0, -1)] + ["a_0 = torch", "y = a_2999.softmax(x, -1)"]
    found = violations("import torch\n" + "\n".join(lines))
    assert len(found) == 1 and "torch.softmax is forbidden" in found[0] and found[0].startswith("line 3002:")


def test_a_byte_order_mark_is_not_part_of_the_code():
    source = "import torch\ny = torch.softmax(x, -1)"
    found = check(ast.parse(source), "\ufeff" + source, RULES)
    assert [(v.line, v.column, v.text) for v in found] == [(2, 5, "torch.softmax")]


def test_a_file_with_a_byte_order_mark_is_read_and_keeps_its_bytes(tmp_path):
    path = tmp_path / "bom.py"
    path.write_bytes(codecs.BOM_UTF8 + b"import torch\ny = torch.softmax(x, -1)\n")
    source, tree = read_source(path, 1 << 16)
    assert source.startswith(codecs.BOM_UTF8)  # Python accepts the mark when it imports the file
    found = check(tree, source.decode(), RULES)
    assert [(v.line, v.column, v.text) for v in found] == [(2, 5, "torch.softmax")]


def test_a_file_with_a_byte_order_mark_then_bad_utf8_names_the_real_offset(tmp_path):
    path = tmp_path / "bom.py"
    path.write_bytes(codecs.BOM_UTF8 + b"x = 1\n# \xff\n")
    with pytest.raises(Rejection) as refused:
        read_source(path, 1 << 16)
    assert refused.value.verdict == Verdict.COMPILE_ERROR
    assert "line 2: the file is not valid UTF-8 (byte 0xff at offset 11)" in refused.value.message


@pytest.mark.parametrize("source", ["x = " + " + ".join(["a"] * 20000), "x = " + "-" * 200000 + "1", "x = a" + ".b" * 100000])
def test_a_file_too_deeply_nested_to_parse_is_a_compile_error(tmp_path, source):
    path = tmp_path / "deep.py"
    path.write_text(source)
    with pytest.raises(Rejection) as refused:
        read_source(path, 1 << 20)
    assert refused.value.verdict == Verdict.COMPILE_ERROR
    assert "too deeply nested to parse" in refused.value.message


def test_a_name_an_allowed_module_does_not_have_is_left_to_fail_at_run_time():
    # a typo is a runtime_error with Python's own message, not a forbidden use
    assert violations("import math\nfrom math import gelu\ny = math.tahn(1.0)") == []
    # a module that makes attributes on demand might have it: refused, with what to do instead
    assert any("numpy.f2py" in v for v in violations("import numpy\ny = numpy.f2py"))


def test_the_source_text_is_cut_by_character_on_lines_with_non_ascii_text_and_any_line_ending():
    source = "import torch\r\nnote = 'σ²'; y = torch.softmax(x, -1)\rz = 'π' + x.softmax(-1)\n"
    found = check(ast.parse(source), source, RULES)
    assert [(v.line, v.column, v.text) for v in found] == [(2, 18, "torch.softmax"), (3, 11, "x.softmax")]


def test_a_report_lists_the_first_violations_and_counts_the_rest():
    source = "y = x.softmax(-1)\n" * 120
    found = check(ast.parse(source), source, RULES)
    report = explain(found)
    assert len(found) == 120 and report.startswith("120 uses of forbidden APIs")
    assert report.count(".softmax is forbidden") == 50 and report.endswith("... and 70 more (fix these first)")


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("import torch\ny = torch.embedding(w, ids)", "torch.embedding is not on this challenge's allow-list; index the matrix instead: w[ids]"),
        ("import torch\ny = torch.LongTensor([1])", "torch.LongTensor is not on this challenge's allow-list; use torch.tensor(...) or torch.as_tensor(...)"),
        ("import torch\ny = torch.load('f')", "torch.load is not on this challenge's allow-list; files are off-limits"),
    ],
)
def test_a_name_off_the_lists_an_honest_file_may_reach_for_says_what_to_write_instead(source, says):
    assert any(says in v for v in violations(source)), violations(source)
