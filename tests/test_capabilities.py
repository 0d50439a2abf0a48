"""The capability layer (grader/child/capabilities/): what a submission's code can reach is decided
on the objects at run time, by the rules' allow-lists, so every route to the interpreter or to a
function off the lists is refused whatever the syntax, and honest code (private names of its own,
names an allowed module does not have, modules as values) runs unchanged.

Each snippet runs here, in this process, as the child runs a submission: compiled from its text
after the rewrite, with the restricted built-ins. A refusal is recorded as the runtime guard records
it, so catching its exception hides nothing.
"""

import functools
import hashlib
import os
import subprocess
import sys
import textwrap
import types
import typing
import warnings

import pytest
import torch

from grader.child.capabilities.checks import Capabilities
from grader.child.capabilities.rewrite import RefusedSyntax, compile_submission
from grader.rules import base_rules
from grader.spec import load_spec
from tests.grading import ROOT, grade_json

RULES = load_spec().rules.child_config()  # the default challenge's: the harness's lists, narrowed by its package
BASE = base_rules().child_config()  # the harness's lists, as every challenge starts from them
PRELUDE = """\
import torch
x = torch.ones(2, 3)
g = (i for i in range(3))
def f(a):
    return a
"""
PRELUDE_LINES = PRELUDE.count("\n")


VMAPPED_FUNCTION = """
class Square(torch.autograd.Function):
    generate_vmap_rule = True
    @staticmethod
    def forward(x, k):
        return x * x * k
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.k = inputs[1]
        SETUP
    @staticmethod
    def backward(ctx, g, *rest):
        (x,) = ctx.saved_tensors
        return 2 * x * g * ctx.k, None
""".replace("SETUP", "pass")


class Refused(RuntimeError):
    pass


def run(source: str, library: dict | None = None, rules: dict | None = None) -> tuple[dict, list[str]]:
    """The snippet's globals after it ran (or stopped at its first refusal), and what was refused.
    `library`: names the snippet finds in its globals, standing for library code (not rewritten);
    `rules`: the lists (the default challenge's when None)."""
    found: list[str] = []

    def refuse(what: str) -> None:
        found.append(what)
        raise Refused(what)

    filename = f"snippet_{hashlib.sha256(source.encode()).hexdigest()[:8]}.py"
    capabilities = Capabilities({"rules": RULES if rules is None else rules, "submission": filename}, refuse)
    namespace = capabilities.namespace("candidate_submission") | (library or {})
    code = compile_submission(PRELUDE + textwrap.dedent(source), filename)
    capabilities.trust(code)
    try:
        exec(code, namespace)  # noqa: S102
    except Refused:
        pass
    return namespace, found


@pytest.mark.parametrize(
    "source, named",
    [
        # the audit's routes: a module obtained as a value, then its sys
        (
            "import typing\ntry:\n    typing.no_such_name\nexcept AttributeError as e:\n    m = e.obj.sys",
            "typing.sys, which is a module outside the allowed list",
        ),
        ("class Own:\n    sys = None\nimport typing\nm = typing.sys", "typing.sys, which is a module outside the allowed list"),
        ("import functools\nclass Own:\n    pass\nfunctools.update_wrapper(Own(), torch.Tensor.add, assigned=('__globals__',))", "functools.update_wrapper"),
        ("import functools\ndef own(): pass\nfunctools.wraps(f, updated=('__dict' + '__',))(own)", "functools.wraps"),
        ("from functools import update_wrapper\ndef own(): pass\nupdate_wrapper(own, f, assigned=('__code__',))", "functools.wraps"),
        ("import enum\nE = enum.Enum('E', {'A': 1, '__array_interface__': {}})", "enum's functional API"),
        ("import abc\nX = abc.ABCMeta('X', (), {'__array_interface__': {}})", "defining __array_interface__"),
        ("import abc\nmeta = type(abc.ABC)\nX = meta('X', (), {'__array_interface__': {}})", "defining __array_interface__"),
        ("X = type(torch.Tensor)('X', (torch.Tensor,), {'__array_interface__': {}})", "defining __array_interface__"),
        ("class Lazy:\n    def __getattr__(self, name):\n        return {}", "defining __getattr__"),
        ("sys = print.__self__", "the special attribute __self__"),
        ("import typing\nsys = [typing][0].sys", "typing.sys, which is a module outside the allowed list"),
        ("import functools\nF = functools.reduce(getattr, ['nn', 'functional'], torch)", "torch.nn, which is a module outside the allowed list"),
        ("import typing\nsys = getattr({'t': typing}['t'], 's' + 'ys')", "typing.sys, which is a module outside the allowed list"),
        ("import dataclasses\nb = dataclasses.builtins", "dataclasses.builtins, which is a module outside the allowed list"),
        ("import enum\nm = enum.sys", "enum.sys, which is a module outside the allowed list"),
        ("from typing import sys", "typing.sys, which is a module outside the allowed list"),
        # Python's machinery: frames, code, globals, closures
        ("caller = g.gi_frame", "the attribute gi_frame, Python's machinery (frame)"),
        ("c = f.__code__", "the special attribute __code__"),
        ("gl = f.__globals__", "the special attribute __globals__"),
        ("gl = getattr(f, '__glob' + 'als__')", "the special attribute __globals__"),
        ("try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    tb = e.__traceback__", "the special attribute __traceback__"),
        ("subclasses = object.__subclasses__()", "the special attribute __subclasses__"),
        ("d = vars(torch)", "vars() of anything but"),
        ("d = torch.__dict__", "the special attribute __dict__"),
        ("get = object.__getattribute__\nc = get(torch, '_C')", "the special attribute __getattribute__"),
        ("cell = (lambda: x).__closure__", "the special attribute __closure__"),
        # reflective functions that take attribute names as data
        ("import operator\nget = operator.attrgetter('__globals__')", "operator.attrgetter"),
        ("import operator\ncall = operator.methodcaller('softmax', -1)", "operator.methodcaller"),
        ("import typing\nhints = typing.get_type_hints(f)", "typing.get_type_hints"),
        ("import functools\nd = functools.singledispatch(f)", "functools.singledispatch"),
        # private names of objects the file did not define; torch's internals
        ("c = torch._C", "the private attribute torch._C"),
        ("r = torch._refs.softmax", "the private attribute torch._refs"),
        ("d = getattr(torch, '_deco' + 'mp')", "the private attribute torch._decomp"),
        ("from torch import _C", "the private attribute torch._C"),
        ("s = x._make_subclass", "the private attribute torch.Tensor._make_subclass"),
        ("class Mine(torch.Tensor):\n    pass\ns = Mine._make_subclass", "the private attribute torch.Tensor._make_subclass"),
        ("class H:\n    __dict__ = {'__array_interface__': {}}", "a class (H) defining __dict__"),
        (
            "import functools\nclass H:\n    pass\ndef f():\n    pass\nh = H()\nh.x = 1\nfunctools.update_wrapper(f, h)\nassert f.x == 1\n"
            "type('W', (), {'__dict__': {'__array_interface__': {}}})",
            "a class (W) defining __dict__",
        ),
        ("ops = torch.ops", "torch.ops, which is a module outside the allowed list (call the public torch function instead)"),
        ("g = torch.Graph", "torch.Graph, which is not on this challenge's allow-list"),
        ("with torch.DisableTorchFunction():\n    pass", "torch.DisableTorchFunction"),
        # forbidden functions, by any syntax, on objects the file did not define
        ("y = torch.softmax(x, -1)", "torch.softmax, which is not on this challenge's allow-list (write the softmax with exp and sum"),
        ("y = x.softmax(-1)", "torch.Tensor.softmax, which is not on this challenge's allow-list (write the softmax"),
        ("y = getattr(torch, 'layer' + '_norm')", "torch.layer_norm, which is not on this challenge's allow-list (write the layer norm"),
        ("from torch import softmax", "torch.softmax, which is not on this challenge's allow-list"),
        ("match [torch]:\n    case [object(sys=s)]:\n        pass", "a class pattern read"),
        ("import numpy as np\nnp.zeros(3).tofile('f')", "numpy.ndarray.tofile"),
        ("p = x.numpy().ctypes", "numpy.ndarray.ctypes"),
        ("s = torch.UntypedStorage.from_file('/etc/passwd', False, 64)", "torch.UntypedStorage, which is not on this challenge's allow-list"),
        # imports and built-ins
        ("import os", "the import of os"),
        ("import torch.nn.functional as F", "the import of torch.nn.functional"),
        ("from torch import *", "the import of * from torch"),
        ("y = open('/etc/passwd')", "the built-in open"),
        ("y = eval('1')", "the built-in eval"),
        ("y = __import__('os')", "the import of os"),
        # raw memory handed to numpy or torch, classes built from a dict of names
        ("class Raw:\n    __array_interface__ = {'data': (0, False), 'shape': (8,), 'typestr': '|u1'}", "defining __array_interface__"),
        ("Raw = type('Raw', (), {'__array_interface__': {}})", "defining __array_interface__"),
        ("class Own:\n    pass\no = Own()\nsetattr(o, '__array_interface__', {})", "a change to the special attribute __array_interface__"),
        ("class Own:\n    __match_args__ = ('__dict__',)", "__match_args__ of the class Own"),
        # a class pattern reads the attributes __match_args__ names inside the interpreter: a dataclass field, an
        # __match_args__ of the file's own, a keyword pattern, at any depth of the pattern, are judged by name first
        (
            "import dataclasses\n@dataclasses.dataclass(init=False, repr=False, eq=False)\nclass G(torch.Tensor):\n    untyped_storage: object",
            "a dataclass field named 'untyped_storage'",
        ),
        (
            "class G(torch.Tensor):\n    __match_args__ = ('untyped_storage',)\nmatch x.as_subclass(G):\n    case G(s):\n        pass",
            "a class pattern reading the attribute 'untyped_storage'",
        ),
        ("match x:\n    case torch.Tensor(untyped_storage=s):\n        pass", "a class pattern reading the attribute 'untyped_storage'"),
        # the file's own code runs while dataclasses works (a default's descriptor): a field added then is refused
        (
            "import dataclasses\ndef hook(cls):\n    ann = cls.__annotations__\n    if 'c' in ann:\n        del ann['c']\n"
            "        ann['untyped_storage'] = object\n    return 0\n@dataclasses.dataclass(init=False, repr=False, eq=False)\n"
            "class G(torch.Tensor):\n    a: int = classmethod(property(hook))\n    c: int = 0",
            "a dataclass field named 'untyped_storage' that was not among the class's annotations when it was checked",
        ),
        (
            "import dataclasses\n@dataclasses.dataclass\nclass P:\n    a: int\ndataclasses.fields(P)[0].name = 'untyped_storage'",
            "a change to dataclasses.Field.name",
        ),
        (
            "class G(torch.Tensor):\n    __match_args__ = ('untyped_storage',)\nmatch [x.as_subclass(G)]:\n    case [G(s)]:\n        pass",
            "a class pattern reading the attribute 'untyped_storage'",
        ),
        # library code that compiles or reads what it is handed (a second round of attacks)
        ("import dataclasses\nclass H:\n    slot: int\nH.__annotations__['x if 0 else y'] = int\ndataclasses.dataclass(H)", "a dataclass field named"),
        ("import enum\nclass Base(enum.Enum):\n    pass\nE = Base._convert_('E', __name__, bool, source=torch)", "the private attribute enum.Enum._convert_"),
        ("class Lookup(super):\n    pass", "derived from super"),
        ("import typing\nclass Spy:\n    pass\nmatch Spy():\n    case typing.sys:\n        pass", "typing.sys, which is a module outside the allowed list"),
        # a class pattern's capture is bound before it is checked: what a read hands out as a stand-in is refused there
        ("import functools\nmatch functools:\n    case object(update_wrapper=uw):\n        pass", "a pattern capturing update_wrapper"),
        ("import abc\nmatch abc:\n    case object(ABCMeta=M):\n        pass", "a pattern capturing ABCMeta"),
        # what a forbidden attribute names is refused by identity, also where no path leads: torch.no_grad(module)
        # wraps the module with the real functools.wraps, copying its globals into a function's __dict__
        ("import typing\nh = torch.no_grad(typing).get_type_hints", "typing.get_type_hints"),
        ("import operator\na = torch.enable_grad(operator).attrgetter", "operator.attrgetter"),
        # dataclasses' own code reads fields by the names in __dataclass_fields__: no class the file builds defines it,
        # and it is no readable special attribute
        ("import dataclasses\n@dataclasses.dataclass\nclass P:\n    a: int = 0\nf = P.__dataclass_fields__", "the special attribute __dataclass_fields__"),
        ("T = type('T', (), {'__dataclass_fields__': {}})", "a class (T) defining __dataclass_fields__"),
        ("class T:\n    __dataclass_fields__ = {}", "a class (T) defining __dataclass_fields__"),
        # a class namespace's keys are str itself: a key's own __eq__ could say "no such name" to the checks, "yes" to numpy
        ("Key = type('Key', (str,), {})\nW = type('W', (), {Key('__array_interface__'): {}})", "a key that is not a str itself"),
        ("import abc\nclass K:\n    pass\nW = abc.ABCMeta('W', (), {K(): 1})", "a key that is not a str itself"),
        # a library metaclass building a class for the file: no __getattr__ of the file's, no member of enum's functional
        # API that is neither a name nor a pair (a deque gave the check one name and enum another)
        (
            "import abc\nM = abc.ABCMeta\nW = super(M, M).__new__(M, 'W', (), {'__getattr__': lambda self, name: 0})",
            "a class (W) defining __getattr__, which is not",
        ),
        ("import collections, enum\nclass B(enum.Enum):\n    pass\nE = B('E', [collections.deque(['A', 1])])", "neither a name nor a (name, value) pair"),
        # __import__ takes names of exactly str: a subclass's own __hash__ and __eq__ would answer the checks
        ("class S(str):\n    pass\n__import__('torch', None, None, [S('exp')])", "__import__ with a name that is not a str itself"),
        ("class S(str):\n    pass\n__import__(S('torch'))", "__import__ with a name that is not a str itself"),
        # changing what is not the file's own
        ("torch.exp = lambda t: t", "a change to torch.exp"),
        ("torch.Tensor.exp = None", "a change to torch.Tensor.exp"),
        ("setattr(torch.Tensor, 'softmax', f)", "a change to torch.Tensor.softmax"),
        ("x.__class__ = int", "a change to the special attribute __class__"),
        ("import typing\ntry:\n    typing.nope\nexcept AttributeError as e:\n    e.obj.sys += 1", "a change to typing.sys"),
        # an array over a Python object's memory, which torch.Tensor(array) would make writable
        ("import numpy\na = numpy.ndarray((2,), numpy.float32, buffer=bytes(8))", "a numpy array over the memory of a bytes object"),
        ("import numpy\nt = torch.Tensor(numpy.ndarray((1,), numpy.float32, buffer=numpy.float32(1.5)))", "over the memory of a float32 object"),
        ("import numpy\nb = [numpy.ndarray((2,), numpy.uint8, buffer=b'ab')][0]", "a numpy array over the memory of a bytes object"),
        # an array of objects over an array of numbers: any number read as a pointer, any object's address as a number
        ("import numpy\nslots = numpy.ndarray((2,), dtype=object, buffer=numpy.zeros(2, dtype=numpy.int64))", "a numpy array of Python objects (dtype=object)"),
        ("import numpy\nslots = numpy.ndarray((1,), dtype=[('o', object), ('n', numpy.int64)], buffer=numpy.zeros(2, numpy.int64))", "Python objects"),
        ("import numpy\nslots = numpy.ndarray((2,), dtype=numpy.int64, buffer=numpy.array([x, x], dtype=object))", "a numpy array of Python objects"),
        ("import numpy\nslots = numpy.ndarray((2,), dtype=object, buffer=numpy.zeros(2, dtype=numpy.int64))[1:]", "a numpy array of Python objects"),
        # objects over objects, read across two pointers, or over a record's number
        ("import numpy\nslots = numpy.ndarray((1,), dtype=object, buffer=numpy.array([x, x], dtype=object), offset=4)", "a numpy array of Python objects"),
        ("import numpy\nslots = numpy.ndarray((2,), dtype=object, buffer=numpy.array([x, x, x], dtype=object), strides=(4,))", "Python objects"),
        (
            "import numpy\nrecords = numpy.zeros(2, dtype=numpy.dtype([('n', numpy.int64), ('o', object)], align=True))\n"
            "slots = numpy.ndarray((2,), dtype=object, buffer=records, strides=(16,))",
            "a numpy array of Python objects",
        ),
        # arrays of objects, however made: numpy's object loops call the file's comparisons while they
        # hold pointers they own no reference to (a sort whose comparison empties a slot frees what it holds)
        ("import numpy\nitems = numpy.array([x, 'a', 3], dtype=object)", "a numpy array of Python objects (dtype=object)"),
        ("import numpy\nclass Plain:\n    pass\nitems = numpy.asarray(Plain())", "a numpy array of Python objects (dtype=object)"),
        ("import numpy\ntable = numpy.zeros(2, dtype=[('name', object), ('index', numpy.int64)])", "a numpy array of Python objects"),
        # the constructor called by library code, the array never in the file's hands: checked where it is made
        (
            "import numpy, operator\ntry:\n    found = list(map(operator.getitem, map(numpy.ndarray, [(1,)], [object], [numpy.zeros(1, numpy.int64)]), [0]))\n"
            "except IndexError:  # (here the refusal raises, and the constructor hands out an empty array: in the child, the run ends)\n    pass",
            "numpy.ndarray(..., buffer=...) made, a numpy array of Python objects",
        ),
        (
            "import numpy\nt = list(map(torch.Tensor, map(numpy.ndarray, [(2,)], [numpy.float32], [bytes(8)])))",
            "numpy.ndarray(..., buffer=...) made, a numpy array over the memory of a bytes object",
        ),
        ("import numpy, itertools\nt = list(itertools.starmap(numpy.ndarray, [((2,), numpy.float32, bytes(8))]))", "numpy.ndarray(..., buffer=...) made"),
        # (a keyword whose __eq__ says "buffer" to numpy's parse and "no" to a second look is refused as numpy's C code
        # calls its __eq__, tests/test_callers.py; graded, hostile_buffer_keyword_eq_skips_ndarray_check_raw_memory.py)
    ],
)
def test_each_route_is_refused_at_run_time(source, named):
    _, found = run(source)
    assert any(named in what for what in found), found


@pytest.mark.parametrize(
    "source",
    [
        "match x:\n    case torch._C.TensorBase():\n        pass",
        "match x:\n    case object(_private=p):\n        pass",
        "match x:\n    case object(a=object(b=c)):\n        pass",
        "__mlm_getattr__ = getattr",
        "y = __builtins__",
        "async def f(items):\n    return [i async for i in items]",
    ],
)
def test_syntax_whose_reads_cannot_be_checked_is_refused_before_it_runs(source):
    with pytest.raises(RefusedSyntax):
        compile_submission(textwrap.dedent(source), "snippet.py")


def test_a_class_pattern_capture_is_checked_before_its_body():
    _, found = run("import typing\nmatch typing:\n    case object(sys=s):\n        y = 1")
    assert found and "a class pattern read" in found[0]


@pytest.mark.parametrize(
    "source, check",
    [
        # private names of the file's own classes are its own business
        (
            "class Cache:\n    def __init__(self):\n        self._dtype = torch.float64\n        self.__hidden = 1\n    def _check(self):\n"
            "        return self._dtype, self.__hidden\ny = Cache()._check()",
            "y == (torch.float64, 1)",
        ),
        (
            "class Base:\n    def _helper(self):\n        return 2\nclass Child(Base):\n    def run(self):\n"
            "        return super()._helper()\ny = Child().run()",
            "y == 2",
        ),
        # namedtuple: fields from a list and a keyword, and its documented underscore API
        (
            "from collections import namedtuple\nfields = ['q', 'k']\nP = namedtuple('P', fields, defaults=(0,))\n"
            "p = P._make([1, 2])\ny = (p._asdict(), P._fields, p._replace(q=5).q)",
            "y == ({'q': 1, 'k': 2}, ('q', 'k'), 5)",
        ),
        # own methods with the names of forbidden attributes or functions
        (
            "class Plan:\n    def compile(self):\n        return 1\n    def save(self, v):\n        return v\n    def softmax(self, t):\n        return t\n"
            "p = Plan()\ny = p.compile() + p.save(2) + p.softmax(3)",
            "y == 6",
        ),  # fmt: skip
        # classes and types as ordinary code uses them
        ("shape = (2, 3)\ny = type(shape)(reversed(shape))", "y == (3, 2)"),
        ("y = isinstance(int, type) and issubclass(bool, int) and type(x) is torch.Tensor", "y is True"),
        ("class Meta(type):\n    pass\nclass K(metaclass=Meta):\n    pass\ny = type(K) is Meta", "y is True"),
        ("match x:\n    case torch.Tensor(shape=(n, t)):\n        y = n * t", "y == 6"),
        ("import torch\ny = torch.broadcast_shapes((2, 1), (1, 3))", "y == (2, 3)"),
        ("y = (x.max(dim=-1).indices.tolist(), torch.sort(x[0]).indices.tolist(), x.layout is torch.strided)", "y == ([0, 0], [0, 1, 2], True)"),
        # modules as values, attributes that do not exist where they never run
        ("import math, numpy\nlibs = {'m': math, 'n': numpy}\ny = libs['m'].sqrt(4.0) + libs['n'].sqrt(9.0)", "y == 5.0"),
        ("if False:\n    x.not_a_real_attribute()\ny = 1", "y == 1"),
        ("import typing\nif typing.TYPE_CHECKING:\n    import os\ny = 2", "y == 2"),
        # in-place operations keep their meaning
        (
            "class Acc:\n    total = None\na = Acc()\na.total = torch.zeros(3)\nkept = a.total\na.total += 1\ncounts = [1, 2]\ncounts[0] += 5",
            "kept.sum().item() == 3 and counts == [6, 2]",
        ),  # fmt: skip
        (
            "import functools\ndef deco(fn):\n    @functools.wraps(fn)\n    def inner(*a):\n        return fn(*a) + 1\n    return inner\n@deco\ndef h(v):\n"
            "    return v\ny = (h(1), h.__name__, h.__wrapped__(1))",
            "y == (2, 'h', 1)",
        ),  # fmt: skip
        (
            "import dataclasses\n@dataclasses.dataclass\nclass B:\n    w: int\n    extra: list = dataclasses.field(default_factory=list)\n"
            "y = dataclasses.replace(B(1), w=3).w + len(dataclasses.fields(B))",
            "y == 5",
        ),  # fmt: skip
        ("import enum\nclass Kind(enum.Enum):\n    SOFT = 1\ny = (Kind.SOFT.value, Kind['SOFT'].name, Kind(1) is Kind.SOFT)", "y == (1, 'SOFT', True)"),
        ("v = torch.ones(3, requires_grad=True)\n(v * v).sum().backward()\ny = v.grad.tolist()\nv.grad = None", "y == [2.0, 2.0, 2.0]"),
        ("y = torch.vmap(lambda row: torch.addr(torch.zeros(2, 2), row[:2], row[1:]))(torch.ones(4, 3)).shape", "y == (4, 2, 2)"),
        ("y = f'{x.shape[0]}-{torch.__version__ != \"\"}'", "y == '2-True'"),
        # numpy and torch never share memory: numpy's writes would pass torch's version counter by
        # (a saved index rewritten between the forward and the backward); the values are the same
        (
            "import numpy\nt = torch.arange(3)\na, b, m = t.numpy(), numpy.asarray(t), torch.Tensor.numpy(t)\na[0] = b[1] = m[2] = 9\n"
            "n = numpy.arange(3)\nf, g, h = torch.from_numpy(n), torch.as_tensor(n), torch.asarray(n)\nn[:] = 7\n"
            "y = (t.tolist(), f.tolist(), g.tolist(), h.tolist(), a.tolist(), b.tolist(), m.tolist(), f.dtype)",
            "y == ([0, 1, 2], [0, 1, 2], [0, 1, 2], [0, 1, 2], [9, 1, 2], [0, 9, 2], [0, 1, 9], torch.int64)",
        ),
        # a subclass's own copy() is not how the conversions copy (it could hand back the array itself)
        (
            "import numpy\nclass Mine(numpy.ndarray):\n    def copy(self):\n        return self\n"
            "a = numpy.zeros(3, numpy.float32).view(Mine)\nt, u = torch.from_numpy(a), torch.as_tensor(a)\na[0] = 5.0\ny = (t.tolist(), u.tolist())",
            "y == ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0])",
        ),
        # arrays of numbers over arrays of numbers: views, slices, buffers of numpy's own memory
        (
            "import numpy\nbase = numpy.arange(6, dtype=numpy.float64)\nview = numpy.ndarray((2,), numpy.float64, buffer=base, offset=8)\n"
            "y = (view.tolist(), base[1:4][::2].tolist(), base.reshape(2, 3).T[0].tolist())",
            "y == ([1.0, 2.0], [1.0, 3.0], [0.0, 3.0])",
        ),
        ("match x.dtype:\n    case torch.float32:\n        y = 'f32'\n    case torch.float64:\n        y = 'f64'", "y == 'f32'"),
        # dataclasses' functions through their stand-ins; vars() of a dataclass hands out a copy of its fields
        (
            "import dataclasses\n@dataclasses.dataclass\nclass P:\n    a: int = 0\ny = (dataclasses.replace(P(1), a=2).a, dataclasses.asdict(P(3)))",
            "y == (2, {'a': 3})",
        ),
        (
            "import dataclasses\n@dataclasses.dataclass\nclass P:\n    a: int = 0\nclass F:\n    pass\n"
            "vars(P)['__dataclass_fields__']['b'] = F()\ny = [f.name for f in dataclasses.fields(P(1))]",
            "y == ['a']",
        ),
        ("import enum\nclass B(enum.Enum):\n    pass\nE = B('E', [('A', 1), ['B', 2], 'C'][:2])\ny = (E.A.value, E.B.value)", "y == (1, 2)"),
        # a capture of what a read handed out (functools.wraps's checked stand-in) is the stand-in itself: no refusal
        ("import functools\nmatch [functools.wraps]:\n    case [w]:\n        y = w is functools.wraps", "y"),
        (
            "import dataclasses\n@dataclasses.dataclass\nclass P:\n    rows: int\n    gelu_scale: float\n"
            "match P(2, 0.5):\n    case P(r, g):\n        y = (r, g)",
            "y == (2, 0.5)",
        ),
        (
            "class Cube(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, v, k):\n        ctx.k = k\n        return v * k\n"
            "    @staticmethod\n    def backward(ctx, g):\n        return g * ctx.k, None\nv = torch.ones(2, requires_grad=True)\n"
            "Cube.apply(v, 3.0).sum().backward()\ny = v.grad.tolist()",
            "y == [3.0, 3.0]",
        ),  # fmt: skip
        # an object made by a class the lists name is the file's to hold: a context manager kept in a name
        ("guard = torch.no_grad()\nwith guard:\n    y = (x * 2).requires_grad", "y is False"),
        ("import functools\nscale = functools.partial(torch.mul, other=2.0)\ny = scale(x).sum().item() == 2 * x.sum().item()", "y"),
        # a layer class called as a function, with a repr; a slots dataclass, frozen or not
        (
            "class Layer:\n    def __init__(self, w):\n        self.w = w\n    def __call__(self, v):\n        return v * self.w\n"
            "    def __repr__(self):\n        return f'Layer({self.w})'\ny = (Layer(3)(2), repr(Layer(1)))",
            "y == (6, 'Layer(1)')",
        ),  # fmt: skip
        (
            "import dataclasses\n@dataclasses.dataclass(slots=True, frozen=True)\nclass Cfg:\n    heads: int\n    eps: float = 1e-5\n"
            "@dataclasses.dataclass(slots=True)\nclass State:\n    n: int = 0\ns = State()\ns.n += 1\ny = (Cfg(2).heads, s.n)",
            "y == (2, 1)",
        ),  # fmt: skip
        # what ordinary code reads of a dtype, a device and a shape
        (
            "y = (x.dtype.is_floating_point, x.dtype.itemsize, x.device.type, x.shape.numel(), x.type(torch.float64).dtype)",
            "y == (True, 4, 'cpu', 6, torch.float64)",
        ),
        # torch.manual_seed returns the default generator, which a file may hold and pass on
        ("g = torch.manual_seed(0)\ny = torch.randn(2, generator=g).shape", "y == (2,)"),
        # in-place methods on tensors the file made
        ("z = torch.zeros(2, 3)\nz.add_(1).mul_(x).gt_(0.5)\ny = z.dtype", "y == torch.float32"),
        # an autograd Function under torch.vmap with generate_vmap_rule: its context is functorch's wrapper of the real one
        (
            VMAPPED_FUNCTION + "w = torch.ones(3, 2, requires_grad=True)\ntorch.vmap(Square.apply, in_dims=(0, None))(w, 3.0).sum().backward()\n"
            "y = w.grad.tolist()",
            "y == [[6.0, 6.0]] * 3",
        ),  # fmt: skip
    ],
)
def test_honest_code_runs_unchanged(source, check):
    # the harness's own lists: a package may remove some of what is here (autograd, where the
    # challenge asks for a forward pass only)
    namespace, found = run(source, rules=BASE)
    assert found == []
    assert eval(check, {"torch": torch}, namespace)  # noqa: S307


def test_a_long_generated_expression_is_rewritten_without_recursion():
    source = "y = " + " + ".join(f"x.sum() * {i}" for i in range(900))
    namespace, found = run(source)
    assert found == [] and namespace["y"].item() == 6 * sum(range(900))


@pytest.mark.slow
def test_nothing_forbidden_is_reachable_through_attributes_of_the_allowed_modules():
    """Walk what a submission can reach by attribute reads from the allowed modules, three deep,
    through the capability layer itself (every name of dir(), private and special ones too): no
    module outside the list, no frame, code object or forbidden function comes back."""
    capabilities = Capabilities({"rules": RULES, "submission": "walk.py"}, _raise)
    forbidden = {id(obj): name for name, obj in [("torch.softmax", torch.softmax), ("Tensor.softmax", torch.Tensor.softmax), ("torch.ops", torch.ops)]}
    forbidden |= {id(torch.load): "torch.load", id(torch._C): "torch._C", id(torch.UntypedStorage.from_file): "from_file"}
    reached, seen = {}, set()
    frontier = [(module, module.__name__) for module in capabilities.modules.values()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            following = []
            for obj, path in frontier:
                if id(obj) in seen:
                    continue
                seen.add(id(obj))
                if id(obj) in forbidden:
                    reached[forbidden[id(obj)]] = path
                if isinstance(obj, (types.FrameType, types.CodeType, types.TracebackType)) or (
                    isinstance(obj, types.ModuleType) and not any(obj is allowed for allowed in capabilities.modules.values())
                ):
                    reached[repr(obj)[:60]] = path
                for name in dir(obj):
                    try:
                        following.append((capabilities.getattr(obj, name), f"{path}.{name}"))
                    except Exception:  # noqa: BLE001 - refused, or an attribute that raises
                        continue
            frontier = following
    assert len(seen) > 5000  # the walk did go through torch and numpy
    assert reached == {}


def _raise(what: str) -> None:
    raise Refused(what)


def _outcome(read: typing.Callable[[], typing.Any]) -> tuple[str, typing.Any]:
    try:
        return "value", read()
    except Refused as refusal:
        return "refused", str(refusal)
    except Exception as error:  # noqa: BLE001 - an attribute that raises raises the same on either path
        return "raised", type(error)


def _same(one: typing.Any, other: typing.Any) -> bool:
    """The same object, or equal ones made anew at each read (a bound method, a view, a stand-in)."""
    if one is other:
        return True
    if type(one) is not type(other):
        return False
    if isinstance(one, torch.Tensor):
        return one.shape == other.shape and one.dtype == other.dtype and one.data_ptr() == other.data_ptr()
    if isinstance(one, types.FunctionType):  # a checked stand-in made at each read (mro)
        return one.__code__ is other.__code__
    if isinstance(one, functools.partial):
        return one.func is other.func and len(one.args) == len(other.args) and all(a is b for a, b in zip(one.args, other.args, strict=True))
    try:
        return bool(one == other)
    except Exception:  # noqa: BLE001 - no equality defined: objects made anew, compared by kind only
        return True


LIBRARY = {  # library code handing the file's code values no read of its own gave
    "harmless": lambda: torch.nn.functional.relu,
    "hand": lambda: torch.load,
    "harmlesses": lambda: iter([torch.nn.functional.relu]),
    "hands": lambda: iter([torch.load]),
    "harmless_pair": lambda: iter([1, torch.nn.functional.relu]),
    "pair": lambda: iter([1, torch.load]),
    "method": lambda: torch.ones(1).untyped_storage().resize_,
}


@pytest.mark.parametrize(
    "source, named",
    [
        ("k = harmless()\nl = hand()", "a value a call returned, torch.load"),
        ("for k in harmlesses():\n    pass\nfor l in hands():\n    pass", "a value a loop or an assignment gave, torch.load"),
        ("a, k = harmless_pair()\na, l = pair()", "a value a loop or an assignment gave, torch.load"),
        ("k = x.view\nl = method()", "an object of torch.storage.UntypedStorage"),
    ],
)
def test_a_value_of_a_kind_met_before_is_still_judged_by_what_it_is(source, named):
    """A call's result and a loop's or an assignment's items are let through in one call when their
    class is judged harmless, but not a function or method (a class some refused object has): the
    same class holds torch.nn.functional.relu and torch.load, a tensor's view and a storage's resize_."""
    _, found = run(source, LIBRARY)
    assert found and named in found[0]


def test_the_common_read_decides_as_check_name_and_checked_attribute_do():
    """Capabilities.getattr decides the common read (a public name on a tensor, a number, a class or
    an allowed module) in one call, without check_name and checked_attribute. On every name of
    everything two reads deep from the allowed modules and from a tensor, private and special names
    and forbidden ones included, it gives what those two give: the same value, or the same
    refusal. Each name is read the full way first, so that the second read finds it judged and takes
    the short way where it may."""
    capabilities = Capabilities({"rules": RULES, "submission": "common.py"}, _raise)
    capabilities.namespace("candidate_submission")
    checked_name = capabilities.check_name
    full_checks = [0]

    def counted(obj: typing.Any, name: str) -> None:
        full_checks[0] += 1
        checked_name(obj, name)

    capabilities.check_name = counted
    # Objects the file may come to hold by library code, whatever their kind: a method of a module
    # outside the allowed list, held by an object of a harmless class, is refused as it is met.
    outside = [sys, warnings, types.SimpleNamespace(a=sys, getpid=os.getpid), (i for i in range(2)), sys._getframe(), _same, [sys], {"a": sys}]
    frontier = [*capabilities.modules.values(), torch.ones(2, 3), torch.Tensor, 3, 2.5, None, torch.float32, torch.Size([2]), *outside]
    seen, reads, differences = set(), 0, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            following = []
            for obj in frontier:
                if id(obj) in seen:
                    continue
                seen.add(id(obj))
                for name in dir(obj):
                    full = _outcome(lambda obj=obj, name=name: (counted(obj, name), capabilities.checked_attribute(name, getattr(obj, name), obj))[1])
                    before = full_checks[0]
                    short = _outcome(lambda obj=obj, name=name: capabilities.getattr(obj, name))
                    reads += full_checks[0] == before
                    if full[0] != short[0] or not (_same(full[1], short[1]) if full[0] == "value" else full[1] == short[1]):
                        differences.append((type(obj).__name__, name, full, short))
                    if full[0] == "value":
                        following.append(full[1])
            frontier = following
    assert differences == []
    assert reads > 5000  # the short way was taken: the test compares something


CATCHER = """import typing

import torch

CALLS = []


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    CALLS.append(1)
    print("CALL", len(CALLS))
    try:
        sys = [typing][0].sys  # refused: the run ends here, whatever this file catches
    except BaseException:
        print("CAUGHT")
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)
"""


@pytest.mark.sandbox
def test_a_refusal_ends_the_run_whatever_the_file_catches(tmp_path):
    path = tmp_path / "solution.py"
    path.write_text(CATCHER)
    report, status = grade_json(str(path), "--public")
    assert (report["verdict"], status) == ("forbidden_api", 1)
    assert "typing.sys, which is a module outside the allowed list (line 12 of solution.py)" in report["message"]
    # the submission was called once: every later case is answered with the finding, unrun
    assert report["stdout"].strip() == "[case public_tiny, forward call]\nCALL 1" and "CAUGHT" not in report["stdout"]
    assert all(case["status"] == "forbidden_api" for case in report["cases"])


def test_annotations_under_future_annotations_stay_as_written(monkeypatch):
    # dataclasses reads them as text (ClassVar is not a field); they are never run
    source = (
        "from __future__ import annotations\nimport dataclasses\nimport typing\n@dataclasses.dataclass\nclass Config:\n"
        "    scale: typing.ClassVar[float] = 2.0\n    heads: int\ny = [f.name for f in dataclasses.fields(Config)]\n"
    )
    found: list[str] = []
    capabilities = Capabilities({"rules": RULES, "submission": "future.py"}, found.append)
    module = types.ModuleType("candidate_submission")  # as the runner loads it: dataclasses looks it up
    vars(module).update(capabilities.namespace("candidate_submission"))
    monkeypatch.setitem(sys.modules, "candidate_submission", module)
    code = compile_submission(source, "future.py")
    capabilities.trust(code)
    exec(code, vars(module))  # noqa: S102
    assert found == [] and vars(module)["y"] == ["heads"]


def test_a_class_built_out_of_sight_with_a_getattr_of_the_files_is_refused_wherever_it_is_met():
    # abc once handed __subclasshook__ the real `type`: a class built with it, claiming torch as its
    # module, is no class of the file's, and its __getattr__ could answer numpy's __array_interface__
    capabilities = Capabilities({"rules": RULES, "submission": "sub.py"}, _raise)
    written: dict = {}
    exec(compile("def leak(self, name):\n    return 0\n", "sub.py", "exec"), written)  # noqa: S102
    raw = type("Raw", (), {"__getattr__": written["leak"], "__module__": "torch"})
    with pytest.raises(Refused, match="raw memory"):
        capabilities.check_value(raw, "a value a call returned")
    with pytest.raises(Refused, match="raw memory"):
        capabilities.check_value(raw(), "a value a call returned")
    library = type("Alias", (), {"__getattr__": typing._GenericAlias.__getattr__, "__module__": "typing"})
    assert capabilities.check_value(library(), "a value a call returned") is not None  # a library's own __getattr__


class _Handing:
    """Library code that hands the file's code a value the file never read: `sys`, as a callback's
    argument, as what a context manager's __enter__ returns, as what is sent into a generator."""

    def call_back(self, function):
        return function(sys)

    def __enter__(self):
        return sys

    def __exit__(self, *exception):
        return False

    def send_into(self, generator):
        next(generator)
        return generator.send(sys)

    def run_async(self, function):
        """Drives a coroutine of the file's over an asynchronous iterator that yields `sys`."""

        class Items:
            def __aiter__(self):
                return self

            async def __anext__(self):
                if getattr(self, "done", False):
                    raise StopAsyncIteration
                self.done = True
                return sys

        try:
            function(Items()).send(None)
        except StopIteration as stop:
            return stop.value

    def classes(self):
        """What a library call may return: a list holding the real `type` (type.mro(type) does)."""
        return [[1, (type,)]]

    def keyed(self):
        return {getattr: 1}

    def poison(self, obj, interface):
        """Library code that writes an instance's own __dict__ with a name of the file's choosing
        (functools.cached_property under its attrname, copy's state)."""
        obj.__dict__["__array_interface__"] = interface

    def bound(self, function, which):
        """A bound method read where no check saw it (torch's deepcopy reads a class's __slotnames__)."""
        tensor = torch.ones(2)
        methods = {"c": tensor.untyped_storage, "wrapper": tensor.__getattribute__, "python": types.MethodType(torch.Tensor.storage, tensor)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TypedStorage is deprecated
            methods |= {"module": sys._getframe, "storage": tensor.untyped_storage(), "storage method": tensor.storage().resize_}
        return function(methods[which])


@pytest.mark.parametrize(
    "source, named",
    [
        ("def cb(m):\n    return m\ny = lib.call_back(cb)", "the argument m of cb(), a module outside the allowed list"),
        ("def cb(*ms):\n    return ms\ny = lib.call_back(cb)", "the argument ms of cb(), a module outside the allowed list"),  # with what it holds
        ("y = lib.call_back(lambda m: m)", "the argument m of a lambda, a module outside the allowed list"),
        ("class K:\n    def method(self, m):\n        return m\ny = lib.call_back(K().method)", "the argument m of method()"),
        ("with lib as m:\n    y = m", "the value `with ... as m` bound, a module outside the allowed list"),
        (
            "def gen():\n    got = yield 1\n    yield got.__name__\ny = lib.send_into(gen())",
            "a value sent into a generator, or what `await` returned, a module outside the allowed list",
        ),
        ("async def walk(items):\n    async for m in items:\n        return m\ny = lib.run_async(walk)", "the value `async for m` bound, a module outside"),
        # a container is checked with what it holds: library code takes items out unseen (f(*items), partial, map)
        ("import functools\nmake = functools.partial(*lib.classes()[0][1], 'Raw', (), {})", "a value a call returned, a container holding type"),
        ("y = [*lib.keyed()]", "a value a call returned, a container holding getattr"),
        ("match type:\n    case object(mro=m):\n        y = m(type)", "a class pattern reading the attribute 'mro'"),
        # library code writes an instance's own __dict__ with names of the file's choosing; numpy reads them there
        (
            "import numpy\nclass Holder:\n    pass\nh = Holder()\nlib.poison(h, {'data': (id(numpy), False), 'shape': (4,), 'typestr': '|u1', 'version': 3})\n"
            "y = numpy.asarray(h)",
            "an object of the class Holder whose own __dict__ holds __array_interface__",
        ),
        ("class Box:\n    def __reduce__(self):\n        return (Box, ())\ny = Box()", "a class (Box) defining __reduce__, which is not"),
        # a bound method is judged as the read of its name on what it is bound to, or by its function
        ("y = lib.bound(lambda m: m, 'c')", "torch.Tensor.untyped_storage, which is not on this challenge's allow-list"),
        ("y = lib.bound(lambda m: m, 'wrapper')", "the special attribute __getattribute__"),
        ("y = lib.bound(lambda m: m, 'python')", "the argument m of a lambda, torch.Tensor.storage"),
        ("y = lib.bound(lambda m: m, 'module')", "the function sys._getframe, which no list of this challenge names"),
        # an object of a class the rules refuse (torch's deepcopy hands a tensor's storage to its set_)
        ("y = lib.bound(lambda m: m, 'storage')", "an object of torch.storage.UntypedStorage, which no list of this challenge names"),
        # memory shared with no hold on its owner's resizing: the owner reallocated, the other side dangles
        ("import numpy\na = numpy.zeros(4)\nt = torch.from_numpy(a)\na.resize((1 << 20,), refcheck=False)", "numpy.ndarray.resize"),
        ("t = torch.frombuffer(b'0123', dtype=torch.uint8)", "torch.frombuffer"),
        ("b = bytearray(16)\nt = torch.asarray(b, dtype=torch.int64)", "the built-in bytearray"),  # grown, it frees what the tensor reads
        ("a = x.numpy()\nx.data = torch.zeros(1)", "a change to torch.Tensor.data (an attribute of an object the file did not make"),
        # sparse tensors: their add kernels write at indices never checked against the size
        ("s = x.to_sparse()", "torch.Tensor.to_sparse"),
        ("s = torch.sparse_coo_tensor(torch.zeros(1, 1, dtype=torch.long), torch.ones(1), (2,))", "torch.sparse_coo_tensor"),
        ("i = x.indices()", "torch.Tensor.indices"),
        ("x.data += 1", "a change to torch.Tensor.data (an attribute of an object the file did not make"),
        ("import numpy\nn = numpy.from_dlpack(x)", "numpy.from_dlpack"),
        # operators that reach memory through indices they do not check; .data, an alias autograd does not track
        ("y = torch.segment_reduce(torch.ones(4), 'sum', offsets=torch.tensor([0, 4]), unsafe=True)", "torch.segment_reduce"),
        ("y = torch.ctc_loss", "torch.ctc_loss"),
        ("import numpy\nr = numpy.random.RandomState(0)\nr.set_state(r.get_state())", "numpy.random.RandomState, which is not on this challenge's allow-list"),
        ("i = torch.zeros(2, dtype=torch.long)\ni.data.fill_(5)", "torch.Tensor.data"),
        # aliases autograd's version counter does not see, and backward kernels that trust saved indices
        ("i = torch.zeros(2, dtype=torch.long)\ni.unsafe_split(1)[0].fill_(5)", "torch.Tensor.unsafe_split"),
        ("i = torch.unsafe_chunk(torch.zeros(2), 1)", "torch.unsafe_chunk"),
        ("import numpy\ni = torch.LongTensor(numpy.zeros(2, dtype=numpy.int64))", "torch.LongTensor"),
        ("import numpy\ni = x.new(numpy.zeros(2, dtype=numpy.float32))", "torch.Tensor.new"),
        ("import numpy\nm = numpy.zeros(2).data", "numpy.ndarray.data"),
        ("y, i = torch.max_pool1d_with_indices(x.unsqueeze(0), 1)", "torch.max_pool1d_with_indices"),
        ("y = torch.embedding(x, torch.zeros(1, dtype=torch.long), -1, True, False)", "torch.embedding"),
        ("y = torch.fused_moving_avg_obs_fake_quant", "torch.fused_moving_avg_obs_fake_quant"),
        ("y = torch.mkldnn_rnn_layer", "torch.mkldnn_rnn_layer"),
        ("y = x.to_mkldnn()", "torch.Tensor.to_mkldnn"),
        ("y = torch.embedding_bag(x, torch.zeros(1, dtype=torch.long), torch.zeros(1, dtype=torch.long))", "torch.embedding_bag"),
        # a packed weight's bytes are a C++ pointer: written, then freed, it decrements any word in memory
        ("p = torch.fbgemm_pack_gemm_matrix_fp16(torch.ones(1, 1))", "torch.fbgemm_pack_gemm_matrix_fp16"),
        ("p = getattr(torch, 'fbgemm_' + 'pack_quantized_matrix')", "torch.fbgemm_pack_quantized_matrix"),
        (
            "import dataclasses, numpy\n@dataclasses.dataclass\nclass Holder:\n    value: object\n"
            "record = numpy.zeros(1, dtype=[('t', object)])\nrecord[0]['t'] = [1]\ny = dataclasses.asdict(Holder(record[0]))",
            "a numpy array of Python objects",
        ),
        ("y = lib.bound(lambda m: m, 'storage method')", "torch.TypedStorage.resize_, which is not on this challenge's allow-list"),
        (
            "import dataclasses\nclass Grad(torch.Tensor):\n    pass\n@dataclasses.dataclass\nclass Holder:\n    value: object\n"
            "t = torch.ones(2, requires_grad=True)\nt.grad = torch.zeros(2).as_subclass(Grad)\ny = dataclasses.asdict(Holder(t))",
            "dataclasses.asdict of a tensor whose .grad is a Grad",
        ),
        ("import functools\ncp = functools.cached_property(len)\ncp.attrname = 'x'", "a change to a cached_property's attrname"),
        (
            "import dataclasses\nclass Own:\n    pass\n@dataclasses.dataclass\nclass Holder:\n    value: object\ny = dataclasses.asdict(Holder(Own()))",
            "dataclasses.asdict of a field holding a Own (it would copy it with copy.deepcopy",
        ),
        (
            "import dataclasses\nkept = []\ndef keep(self, name, value):\n    kept.append(value)\n"
            "Slotted = type('Slotted', (torch.Tensor,), {'__slotnames__': ['untyped_storage'], '__setattr__': keep})",
            "a class (Slotted) defining __slotnames__",
        ),
        # an exception's traceback leads to frames ('{0.tb_frame.f_globals}'.format(tb) reads their text)
        (
            "class Quiet:\n    def __enter__(self):\n        return self\n    def __exit__(self, kind, error, tb):\n        return True\n"
            "with Quiet():\n    1 / 0",
            "the argument tb of __exit__(), Python's machinery (traceback)",
        ),
    ],
)
def test_values_library_code_hands_the_files_code_are_checked_where_they_enter(source, named):
    namespace, found = run(source, {"lib": _Handing()})
    assert len(found) == 1 and named in found[0], found
    assert "y" not in namespace


def test_values_the_files_own_code_binds_stay_as_they_were():
    source = (
        "def scale(v, /, k=2, *rest, by=1, **more):\n    'doc'\n    return v * k * by + len(rest) + len(more)\n"
        "class Box:\n    def __enter__(self):\n        return self\n    def __exit__(self, *a):\n        return False\n"
        "def gen():\n    got = yield 1\n    yield got\ng2 = gen()\nnext(g2)\n"
        "with Box() as (b):\n    try:\n        raise ValueError('v')\n    except ValueError as e:\n        caught = e\n"
        "y = (scale(1, 3, 0, 0, by=2, z=1), sorted([3, 1, 2], key=lambda n: -n), type(b).__name__, str(caught), g2.send(5), scale.__doc__)"
    )
    namespace, found = run(source)
    assert found == []
    assert namespace["y"] == (9, [3, 2, 1], "Box", "v", 5, "doc")


def test_a_container_is_read_with_the_built_in_iterators_and_honest_containers_pass():
    source = (
        "class Sly(tuple):\n    def __iter__(self):\n        raise ValueError('ran')\n"
        "nested = [1, (2.0, {'k': [x]}), {3}, frozenset({4})]\nnested.append(nested)\n"
        "def keep(*a, **k):\n    return a, k\n"
        "y = (keep(Sly((1, 2)), nested, key={'deep': [[x]]}), list({'a': x}.items()), torch.split(torch.ones(4), 2))"
    )
    namespace, found = run(source)
    assert found == []
    assert len(namespace["y"][2]) == 2 and namespace["y"][1][0][0] == "a"


def test_asdict_and_astuple_copy_plain_values_as_dataclasses_does():
    source = (
        "import dataclasses, enum, collections, numpy\nclass Kind(enum.Enum):\n    A = 1\nPair = collections.namedtuple('Pair', 'a b')\n"
        "@dataclasses.dataclass\nclass Inner:\n    w: object\n@dataclasses.dataclass\nclass Outer:\n    inner: Inner\n    items: list\n"
        "    table: dict\n    pair: object\n    kind: Kind = Kind.A\n    size: object = torch.Size([2, 3])\n"
        "t = torch.ones(2, requires_grad=True)\nt.grad = torch.full((2,), 3.0)\n"
        "o = Outer(Inner(t), [1, (2.5, 'x')], {'k': numpy.float32(3)}, Pair(torch.float64, None))\n"
        "d = dataclasses.asdict(o)\nu = dataclasses.astuple(o, tuple_factory=list)\nf = dataclasses.asdict(Inner(len), dict_factory=lambda kv: sorted(kv))"
    )
    namespace, found = run(source)
    assert found == []
    import dataclasses as real_dataclasses

    d, u = namespace["d"], namespace["u"]
    w = d["inner"]["w"]
    assert w is not namespace["t"] and torch.equal(w, namespace["t"]) and w.requires_grad and w.is_leaf  # copied, as deepcopy copies
    assert torch.equal(w.grad, namespace["t"].grad) and w.grad is not namespace["t"].grad
    assert d["items"] == [1, (2.5, "x")] and d["table"] == {"k": 3.0} and d["pair"] == (torch.float64, None) and d["kind"] is namespace["Kind"].A
    assert d["size"] == torch.Size([2, 3]) and type(d["pair"]).__name__ == "Pair"
    assert u[1:] == [[1, (2.5, "x")], {"k": 3.0}, (torch.float64, None), namespace["Kind"].A, torch.Size([2, 3])]
    assert [(key, value.__name__, value("ab")) for key, value in namespace["f"]] == [("w", "len", 2)]  # (len, as the relay the file holds)
    assert list(d) == [f.name for f in real_dataclasses.fields(namespace["Outer"])]


def test_objects_of_the_files_classes_still_go_to_numpy_and_torch_as_before():
    source = (
        "import numpy\nclass Plain:\n    pass\nclass Arr(numpy.ndarray):\n    pass\nclass T(torch.Tensor):\n    pass\n"
        "a = numpy.zeros(3).view(Arr)\nt = torch.ones(2).as_subclass(T)\n"
        "y = (numpy.asarray([Plain()] * 0, dtype=float).shape, float(numpy.asarray(a + 1).sum()), float((t * 2).sum()),\n"
        "     torch.as_tensor(numpy.asarray(a)).shape)\n"
        "import math\nmethods = [x.sum, math.sqrt, len, t.abs, x.__add__, Plain().__init__]\nz = [m.__name__ for m in methods]"
    )
    namespace, found = run(source)
    assert found == []
    assert namespace["y"] == ((0,), 3.0, 4.0, (3,))
    assert namespace["z"] == ["sum", "sqrt", "len", "abs", "__add__", "__init__"]  # bound methods of allowed names pass


LAZY_WRAPPER = """
import sys
import functools
import torch
from tests.test_capabilities import run

assert "torch._dynamo" not in sys.modules, "this process imported torch._dynamo already"
_, found = run('''
centre = torch.vmap(lambda row, mean: torch.addr(row, mean, torch.ones(3), alpha=-1))
centred = centre(torch.ones(2, 2, 3), torch.ones(2, 2))
torch.manual_seed(0)
''')
assert "torch._dynamo" in sys.modules, "torch.addr under torch.vmap no longer imports torch._dynamo: this test tests nothing"
print("after the lazy import:", found)

original = torch.manual_seed
torch.manual_seed = functools.wraps(torch.exp)(lambda *args: None)  # a wrapper, but of another function
_, found = run("torch.manual_seed(0)")
torch.manual_seed = original
print("a wrapper of another function:", found)
"""


@pytest.mark.sandbox  # a process of its own
def test_a_listed_function_torch_wraps_after_the_lists_were_resolved_is_still_allowed():
    # torch replaces torch.manual_seed with a wrapper (functools.wraps) when a call first imports
    # torch._dynamo (torch.addr under torch.vmap does), which a single child has not imported
    # before: the wrapper of the listed function is the listed function. In a process of its own,
    # where torch._dynamo is not imported yet.
    done = subprocess.run([sys.executable, "-c", LAZY_WRAPPER], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "after the lazy import: []" in lines, done.stdout
    refused = next(line for line in lines if line.startswith("a wrapper of another function:"))
    assert "torch.manual_seed" in refused and "allow-list" in refused, refused


@pytest.mark.parametrize(
    "setup, named",
    [
        ("ctx.next_functions", "next_functions"),  # the real context's names off the lists, read through the wrapper
        ("ctx.mark_dirty(inputs[0])", "mark_dirty"),
        ("ctx._pt_inner_ctx", "_pt_inner_ctx"),  # the wrapper's own
        ("ctx.materialize_grads = False", "materialize_grads"),  # written through it: as on the real context
    ],
)
def test_functorchs_wrapper_of_a_context_is_judged_as_the_context_it_wraps(setup, named):
    source = VMAPPED_FUNCTION.replace("        pass\n", f"        {setup}\n", 1)
    _, found = run(source + "torch.vmap(Square.apply, in_dims=(0, None))(torch.ones(3, 2), 3.0)", rules=BASE)
    assert found and named in found[0], found
