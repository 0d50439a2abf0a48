"""Relays (grader/child/capabilities/relays.py): a callable of someone else's reaches the file's hands
as a value only as a relay, which refuses to run under library C code, as the file's own functions
do. numpy's walk of a list calls the special methods of its items; here a stand-in for library code
(`Hook`, whose __len__ calls what it was given, as a library base's method calls a name or a stored
factory) runs the callable inside numpy's walk, with no function of the file's between."""

import textwrap

import numpy
import pytest

from grader.child.capabilities.rewrite import RefusedSyntax
from tests.test_capabilities import run


class Hook:
    """Library code that calls, inside numpy's walk of a list, the callable it was given."""

    def __init__(self, hook: object, *args: object) -> None:
        self.hook, self.args = hook, args

    def __len__(self) -> int:
        self.hook(*self.args)
        return 0

    def __getitem__(self, index: int) -> float:
        raise IndexError(index)


LIBRARY = {"Hook": Hook, "numpy": numpy}
WALKED = "import functools, operator, itertools\nitems = [1.0, 2.0]\n"
UNDER_NUMPY = "which your file handed on as a value, run by"


@pytest.mark.parametrize(
    "source",
    [
        "hook = Hook(items.clear)",  # a bound method read as a value
        "hook = Hook(list.clear, items)",  # an unbound one
        "hook = Hook(operator.iadd, items, [0.0] * 100)",  # a module's C function (the list grows: its storage moves)
        "from operator import iadd\nhook = Hook(iadd, items, [0.0] * 100)",  # imported
        "hook = Hook(functools.partial(list.clear, items))",  # composed: a call's result
        "hook = Hook(next, itertools.chain(map(list.clear, [items])))",  # a built-in read as a value
        "hook = Hook(*map(getattr, [items], ['clear']))",  # unpacked into a call from a map of CPython's
        "for method in map(getattr, [items], ['clear']):\n    hook = Hook(method)",  # a loop's item
        "methods = {'m': items.clear}\nhook = Hook(methods['m'])",  # an item
        "def pass_on(method):\n    return Hook(method)\nhook = next(map(pass_on, map(getattr, [items], ['clear'])))",  # bound by library code
        "class Raw:\n    clear = list.clear\n    hook = Hook(clear, items)\nhook = Raw.hook",  # a name a class body bound, read there
        "class Raw:\n    step = next\n    hook = Hook(functools.partial(step, map(list.clear, [items])))\nhook = Raw.hook",
        # what a class statement assigns, handed out by library code (a NamedTuple's default, in a tuple made by C code)
        "import typing\nclass Parts(typing.NamedTuple):\n    clear: object = list.clear\n"
        "hook = Hook(*itertools.chain.from_iterable(itertools.starmap(Parts, [()])), items)",
    ],
)
def test_a_callable_handed_on_as_a_value_does_not_run_inside_numpys_walk(source):
    # numpy swallows what __len__ raises; the refusal is recorded all the same (and ends the run in the child)
    walk = "\ntry:\n    numpy.array([hook], dtype=float)\nexcept (TypeError, ValueError):\n    pass"
    namespace, found = run(WALKED + textwrap.dedent(source) + walk, LIBRARY)
    assert found and UNDER_NUMPY in found[0] and "numpy" in found[0], found
    assert namespace["items"] == [1.0, 2.0]  # refused before it ran


@pytest.mark.parametrize(
    "source",
    [
        "hook = Hook(items.clear)\nhook.hook()",  # the file's own code calls it: it runs
        "empty = list(map(list.clear, [items]))",  # CPython's C code calls it for the file (map, sorted, reduce)
        "functools.reduce(operator.add, [1, 2])\nempty = sorted([items], key=list.clear)",
    ],
)
def test_a_relay_runs_where_the_files_code_or_cpythons_calls_it(source):
    namespace, found = run(WALKED + textwrap.dedent(source), LIBRARY)
    assert found == [] and namespace["items"] == []


def test_a_container_a_call_returns_may_not_hold_a_callable_no_relay_stands_for():
    # a class called by CPython's map makes callables no relay stands for; what a relay returns comes as a relay
    _, found = run(WALKED + "getters = list(map(operator.itemgetter, [0]))", LIBRARY)
    assert found and "a container holding itemgetter" in found[0]
    namespace, found = run(WALKED + "methods = list(map(getattr, [items], ['clear']))", LIBRARY)
    assert found == [] and [(type(m).__name__, m.__name__) for m in namespace["methods"]] == [("function", "clear")]  # a relay


@pytest.mark.parametrize(
    "source, value",
    [
        ("class Block:\n    act = torch.tanh\n    def f(self, x):\n        return self.act(x)\nvalue = Block().f(torch.zeros(2)).tolist()", [0.0, 0.0]),
        ("class Row(list):\n    push = list.append\nr = Row()\nr.push(3)\nvalue = r", [3]),  # a method descriptor still binds
        ("import enum, functools\nclass Act(enum.Enum):\n    TANH = functools.partial(torch.tanh)\nvalue = Act.TANH.value(torch.zeros(1)).item()", 0.0),
        ("fn = torch.tanh\nvalue = (fn is torch.tanh, fn == torch.tanh, {fn: 1}[torch.tanh])", (True, True, 1)),
        ("from math import sqrt\nvalue = [sqrt(4.0), *map(sqrt, [9.0])]", [2.0, 3.0]),
        ("value = sorted(['aaa', 'b', 'cc'], key=len) + list(map(str.strip, [' d ']))", ["b", "cc", "aaa", "d"]),
        ("import functools, operator\nvalue = functools.reduce(operator.mul, [2, 3, 4])", 24),
        ("out = []\npush = out.append\nfor i in range(3):\n    push(i)\nvalue = out", [0, 1, 2]),
        ("import functools\nadd2 = functools.partial(torch.add, alpha=2)\nvalue = add2(torch.ones(1), torch.ones(1)).item()", 3.0),
        ("import dataclasses\n@dataclasses.dataclass\nclass C:\n    act: object = torch.tanh\nvalue = C().act(torch.zeros(1)).item()", 0.0),
        ("from typing import NamedTuple, Optional\nclass P(NamedTuple):\n    x: Optional[int] = None\nvalue = P(2).x", 2),
        (
            "grad_off = torch.no_grad()\nwith grad_off:\n    y = x * 2\nwith torch.no_grad():\n    z = x * 3\nvalue = (y.requires_grad, z.requires_grad)",
            (False, False),
        ),
        ("class K:\n    __hash__ = object.__hash__\nvalue = hash(K()) != 0", True),
        ("import functools\nclass L:\n    @functools.cache\n    def __call__(self, n):\n        return n + 1\nvalue = L()(1)", 2),
        ("shape = (2, 3)\nvalue = list(torch.zeros(*shape).shape)", [2, 3]),
        ("import typing\nclass Cfg(typing.NamedTuple):\n    act: object = torch.tanh\nvalue = Cfg().act(torch.zeros(1)).item()", 0.0),
        # set on a class after its statement, as a class statement would keep it
        (
            "class Block:\n    pass\nBlock.act = torch.tanh\nsetattr(Block, 'exp', torch.exp)\nb = Block()\n"
            "value = (b.act(torch.zeros(1)) + b.exp(torch.zeros(1))).item()",
            1.0,
        ),
        ("class Row(list):\n    pass\nRow.push = list.append\nr = Row()\nr.push(3)\nvalue = r", [3]),
        # a functools.partial of what the file holds stays a partial
        (
            "import functools\nrow_sum = functools.partial(torch.sum, dim=-1, keepdim=True)\n"
            "value = (isinstance(row_sum, functools.partial), row_sum.func is torch.sum, row_sum.keywords['dim'], row_sum(torch.ones(2, 3)).tolist())",
            (True, True, -1, [[3.0], [3.0]]),
        ),
        ("fn = torch.exp\nvalue = f'{fn.__module__}.{fn.__name__}'", "torch.exp"),
    ],
)
def test_honest_code_with_callables_as_values_runs_as_before(source, value):
    namespace, found = run(source)
    assert found == []
    assert namespace["value"] == value


def test_an_import_inside_a_class_statement_is_refused_before_it_runs():
    # (the names it binds would be the class's, kept as the import reads them)
    for source in ("class Ops:\n    from operator import iadd", "class Ops:\n    if True:\n        from operator import iadd"):
        with pytest.raises(RefusedSyntax, match="inside a class statement"):
            run(source)
    _, found = run("class Ops:\n    def f(self):\n        from operator import iadd\n        return iadd\nvalue = Ops().f()")
    assert found == []  # (a method's import binds the method's own names)


def test_a_dataclass_field_may_not_take_a_callable_of_a_base_class_as_its_default():
    # dataclasses reads getattr(cls, name) for a field's default, out of the checks' sight
    _, found = run("import dataclasses\n@dataclasses.dataclass\nclass Row(list):\n    clear: object")
    assert found and "a dataclass field named 'clear', which list defines" in found[0]
    namespace, found = run("import dataclasses\nclass Base:\n    eps = 1e-5\n@dataclasses.dataclass\nclass Norm(Base):\n    eps: float\nvalue = Norm().eps")
    assert found == [] and namespace["value"] == 1e-5  # plain data a base holds is a default as before


def test_a_file_cannot_make_a_relay_of_its_own_choosing():
    # type() of a relay a class holds is the grader's class; it holds nothing but a relay (not the file's function)
    source = (
        "class Block:\n    act = torch.tanh\ndef mine():\n    pass\n"
        "try:\n    type(vars(Block)['act'])(mine)\n    value = 'made'\nexcept TypeError as e:\n    value = str(e)"
    )
    namespace, found = run(source)
    assert found == [] and namespace["value"] == "a HeldRelay holds a relay"
