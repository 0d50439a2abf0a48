"""What a class of the file's may derive from and hold (grader/child/capabilities/classes.py and
Capabilities._check_entries): numpy's and torch's conversions call the special methods of the
objects in a list they walk, so no code of anyone's but the file's own functions (which callers.py
refuses there) may run in them, and honest classes run as they always did.

Each refused snippet is the trigger of an attack that got raw memory before these rules (the files
hostile_*_raw_memory.py in reference/mlm_forward_tied/submissions/forbidden_api/): the list emptied
inside numpy's walk by callables of CPython's and the standard library's, with no code of the
file's running.
"""

import pytest

from tests.test_capabilities import run

EMPTIES = "import collections, functools, itertools, operator, enum, torch\nitems = [1.0, 2.0]\nchain = map(list.clear, [items])\n"


@pytest.mark.parametrize(
    "source, named",
    [
        # a special method that is a callable of someone else's, composed by the file
        ("class T:\n    __len__ = functools.partial(collections.deque, chain, 0)", "whose __len__ (a special method) is a partial"),
        ("class T:\n    __float__ = functools.partial(sum, chain, 0.0)", "whose __float__ (a special method) is a partial"),
        (
            "class T:\n    __index__ = functools.lru_cache(functools.partial(dict.fromkeys, chain))",
            "whose __index__ is a cache (_lru_cache_wrapper)",
        ),
        ("class T:\n    __len__ = functools.partialmethod(functools.partial(dict.fromkeys, chain))", "whose __len__ (a special method) is a partialmethod"),
        ("class T:\n    __getitem__ = operator.itemgetter(0)", "whose __getitem__ (a special method) is a itemgetter"),
        ("class T:\n    __iter__ = staticmethod(functools.partial(iter, chain))", "whose __iter__ (a special method) is a staticmethod"),
        ("class T:\n    __len__ = list.clear", "whose __len__ (a special method) is a method_descriptor"),
        # a cache hands back what the file's code returned before, with none of it running
        ("class T:\n    @functools.cached_property\n    def __len__(self):\n        return 0", "whose __len__ is a cache (cached_property)"),
        ("class T:\n    __call__ = functools.cache(functools.partial(len, chain))", "whose __call__ (a special method) is a _lru_cache_wrapper"),
        ("class T:\n    @functools.cache\n    def __iter__(self):\n        return iter(())", "whose __iter__ is a cache (_lru_cache_wrapper)"),
        (
            "class T(torch.Tensor):\n    @functools.cached_property\n    def numpy(self):\n        return 0",
            "whose numpy (a name TensorBase defines) is a cached_property",
        ),
        # torch's grad-mode decorator runs what it wraps: only around a function of the file's
        (
            "class T:\n    __len__ = torch.no_grad()(functools.partial(len, chain))",
            "whose __len__ (a special method) is a function of torch's (decorate_context",
        ),
        (  # torch.no_grad.__call__ takes any self: its wrapper's context factory is then the file's choice
            "class Maker:\n    pass\nmaker = Maker()\nmaker.clone = functools.partial(len, chain)\ndef length(self):\n    return 0\n"
            "class T:\n    __len__ = torch.no_grad.__call__(maker, length)",
            "whose __len__ (a special method) is a function of torch's (decorate_context",
        ),
        (  # a class made while dataclasses works (the file's __repr__ of a default runs then) is checked as any other
            "class Default:\n    def __repr__(self):\n        class Rows:\n            __len__ = torch.Tensor.__len__\n        return 'd'\n"
            "import dataclasses\n@dataclasses.dataclass\nclass Config:\n    scale: object = Default()",
            "whose __len__ (a special method) is a function of torch's (__len__",
        ),
        # enum's functional API makes a class of the file's, checked as a class statement's
        ("E = enum.Enum('E', [('A', 1), ('size', property(functools.partial(len, chain)))])", "whose size is a property over a function"),
        # object.__setattr__ writes as a write would
        ("object.__setattr__(torch.ones(1), 'numpy', len)", "a change to torch.Tensor.numpy"),
        ("class T:\n    pass\nobject.__setattr__(T(), '__len__', len)", "a change to the special attribute __len__"),
        ("setter = getattr(type, '__setattr__')", "the special attribute __setattr__"),
        # functools.wraps writes the wrapper's attributes: never a library object's
        ("def f():\n    pass\nf.numpy = len\nfunctools.update_wrapper(torch.ones(1), f)", "functools.wraps or functools.update_wrapper onto a Tensor"),
        (
            "class T(torch.Tensor):\n    pass\ndef f():\n    pass\nf.numpy = len\nfunctools.update_wrapper(torch.ones(1).as_subclass(T), f)",
            "a change to torch.Tensor.numpy",
        ),
        # a descriptor that calls what it holds when the attribute is read, whatever its name
        ("class T:\n    __len__ = property(functools.partial(dict.fromkeys, chain))", "whose __len__ is a property over a function that is not your file's"),
        ("class T:\n    size = property(items.append)", "whose size is a property over a function that is not your file's"),
        ("class T:\n    __len__ = functools.cached_property(functools.partial(dict.fromkeys, chain))", "whose __len__ is a cached_property over a function"),
        # a name a library base class's Python code reads on the object (torch.Tensor.__len__ reads self.shape)
        ("class T(torch.Tensor):\n    unbind = functools.partial(collections.deque, chain, 0)", "whose unbind (a name TensorBase defines) is a partial"),
        ("class T(torch.Tensor):\n    shape = collections.defaultdict(list)", "whose shape (a name TensorBase defines) is a defaultdict"),
        ("class F(enum.IntEnum):\n    A = 1\n    _missing_ = classmethod(functools.partial(print))", "whose _missing_ (a name Enum defines) is a classmethod"),
        # a base whose code calls what its objects hold, or reads data the file sets
        ("class T(itertools.starmap):\n    pass", "derived from itertools.starmap"),
        ("class T(map):\n    def __len__(self):\n        return 0", "derived from builtins.map"),
        ("class T(functools.partial):\n    pass", "derived from functools.partial"),
        ("class T(functools.cached_property):\n    pass", "derived from functools.cached_property"),
        ("class T(itertools.chain):\n    pass", "derived from itertools.chain"),
        # a library function the library did not put there (Enum.__repr__ reads _value_repr_ on the class)
        ("class T:\n    __repr__ = enum.Enum.__repr__\n    _value_repr_ = len", "whose __repr__ (a special method) is a function of enum.py's"),
        # Flag's __len__ calls its member's value's bit_count, and enum makes members of any int subclass: off the lists
        ("class F(enum.Flag):\n    A = 1", "enum.Flag, which is not on this challenge's allow-list"),
        ("class Bits(int):\n    bit_count = functools.partial(len, chain)", "whose bit_count (a name int defines) is a partial"),
        ("class H:\n    thing = classmethod(property(functools.partial(len, chain)))", "whose thing is a classmethod over a function"),
        (  # partialmethod passes a read on to a descriptor it holds; dataclasses' __repr__ reads the field
            "class H:\n    label = functools.partialmethod(property(functools.partial(len, chain)))",
            "whose label is a partialmethod over a function",
        ),
        ("class T(collections.defaultdict, collections.Counter):\n    pass", "derived from collections.defaultdict"),
        ("class T(collections.OrderedDict):\n    pass", "derived from collections.OrderedDict"),
        # UnicodeError's C __str__ reads a byte at object + start, whatever object is
        ("class E(UnicodeDecodeError):\n    pass", "derived from builtins.UnicodeDecodeError"),
        ("class G(ExceptionGroup):\n    pass", "derived from builtins.ExceptionGroup"),
        # an object's own __dict__ answering for a name a class it derives from defines and calls
        ("class T(torch.Tensor):\n    numpy = None\nt = torch.ones(1).as_subclass(T)\nt.numpy = len", "a change to torch.Tensor.numpy"),
        (
            "class G(collections.abc.Generator, collections.deque):\n    send = None\n    throw = None\ng = G()\ng.send = len",
            "a change to send of an object of your class G: collections.abc.Generator defines send",
        ),
        ("class S(collections.abc.Sequence):\n    pass\nS.__len__ = len", "a change to the special attribute __len__"),
        (  # plain data in the file's class before a base's data descriptor: the write would land in the object's __dict__
            "class T(torch.Tensor):\n    shape = None\nt = torch.ones(2).as_subclass(T)\nt.shape = [1]",
            "a change to torch.Tensor.shape (an attribute of torch's or numpy's on an object of your class",
        ),
        # a name library Python code reads that a C base defines (Counter.__repr__ calls self.items; Mapping.__eq__ other.items)
        ("class T(collections.Counter):\n    pass\nc = T()\nc.items = len", "a change to items of an object of your class T: builtins.dict defines items"),
        ("class Row(dict):\n    pass\nr = Row()\nr.items = len", "a change to items of an object of your class Row: builtins.dict defines items"),
        # functools.cmp_to_key's objects call what they hold when compared (Counter.__repr__ sorts values): off the lists
        ("k = functools.cmp_to_key(len)", "functools.cmp_to_key, which is not on this challenge's allow-list"),
        # enum's bookkeeping, which its len, iteration and items read
        ("class E(enum.Enum):\n    A = 1\nE._member_map_ = collections.defaultdict(list)", "a change to _member_map_ of an Enum"),
        ("class E(enum.Enum):\n    A = 1\nE._member_names_ = chain", "a change to _member_names_ of an Enum"),
        ("class E(enum.Enum):\n    A = 1\nE.A._value_ = 2", "a change to _value_ of an Enum"),
        ("class E(enum.Enum):\n    A = 1\ndelattr(E, '_member_names_')", "a change to _member_names_ of an Enum"),
        # collections.ChainMap's len runs what its maps hold: off the lists
        ("m = collections.ChainMap(chain)", "collections.ChainMap, which is not on this challenge's allow-list"),
    ],
)
def test_code_of_the_files_choosing_that_numpy_could_run_is_refused(source, named):
    namespace, found = run(EMPTIES + source)
    assert len(found) == 1 and named in found[0], found
    assert namespace["items"] == [1.0, 2.0]  # nothing ran the chain


HONEST = """
import abc, collections, dataclasses, enum, functools, numbers, typing
from typing import NamedTuple, Protocol, Generic, TypeVar

T = TypeVar("T")

class Colour(enum.Enum):
    RED = 1
    GREEN = 2
    def describe(self):
        return self.name.lower()

class Reduction(enum.StrEnum):
    mean = "mean"
    upper = "upper"

class Pair(NamedTuple):
    a: int
    b: float = 0.0
    def total(self):
        return self.a + self.b

@dataclasses.dataclass(slots=True, frozen=True, order=True)
class Frozen:
    x: int

@dataclasses.dataclass
class Config:
    x: int = 0
    def __post_init__(self):
        self.x += 1

class Shape(Protocol):
    def area(self) -> float: ...

class Base(abc.ABC):
    @abc.abstractmethod
    def run(self): ...

class Box(Generic[T]):
    pass

class Double(torch.autograd.Function):
    generate_vmap_rule = True
    @staticmethod
    def forward(x):
        return x * 2
    @staticmethod
    def setup_context(ctx, inputs, output):
        pass
    @staticmethod
    def backward(ctx, g):
        return g * 2

@functools.total_ordering
class Version:
    def __init__(self, n):
        self.n = n
    def __lt__(self, other):
        return self.n < other.n
    def __eq__(self, other):
        return self.n == other.n

class Plain(torch.Tensor):
    pass

class Layer:
    def __init__(self, w):
        self.w = w
    def forward(self, x):
        return x @ self.w
    __call__ = forward
    __hash__ = None
    def __repr__(self):
        return "Layer()"
    __str__ = __repr__
    @property
    def shape(self):
        return self.w.shape
    @functools.cached_property
    def t(self):
        return self.w.T
    scaled = functools.partialmethod(forward)
    act = torch.exp
    size = 3

class Tied(Layer):
    def __call__(self, x):
        return super().__call__(x)

class Rows(collections.abc.Sequence):
    def __init__(self):
        self.count = 2  # a name Sequence defines, which none of its special methods reads
    def __len__(self):
        return self.count
    def __getitem__(self, i):
        if i >= 2:
            raise IndexError(i)
        return float(i)

class Failure(ValueError):
    pass

class Block:
    def __eq__(self, other):
        return self is other
    __hash__ = object.__hash__
    @torch.enable_grad()
    def __call__(self, x):
        return x * 2

class Split:
    @functools.cache
    def __call__(self, width):
        return width // 2

@dataclasses.dataclass(frozen=True)
class Scaled:
    d: int
    scale: float = dataclasses.field(init=False)
    def __post_init__(self):
        object.__setattr__(self, "scale", 1 / self.d)

class Cache(dict):
    def __missing__(self, key):
        self[key] = key * 2
        return self[key]

class Mask:
    def __init__(self, bits):
        self.bits = bits
    def __and__(self, other):
        return Mask(self.bits & other.bits)
    def __or__(self, other):
        return Mask(self.bits | other.bits)

Kind = enum.Enum("Kind", ["MEAN", "SUM"])

class Act(str, enum.Enum):
    GELU = "gelu"
    __str__ = str.__str__  # str is also typing.Text, which no list names: the built-in is what is read

class Tally(collections.Counter):
    def top(self):
        return max(self, key=self.get)

class Settings:
    @property
    @functools.cache
    def scale(self):
        return 0.5

class Failed(Exception):
    def __init__(self, message):
        super().__init__(message)
        self.message = message
        self.args = (message,)

class Table(dict):
    pass

class Stream(list):
    def __init__(self, items):
        super().__init__(items)
        self.index = 0  # list's C code reads no name on the object

class Half(numbers.Real):
    pass

y = Double.apply(torch.ones(2, requires_grad=True))
layer = Tied(torch.eye(2))
out = (layer(torch.ones(2)) + y).tolist()
checks = (Colour.RED.describe(), Reduction.mean == "mean", Pair(1, 2.5).total(), Frozen(1) < Frozen(2), Config().x,
          Version(1) <= Version(2), str(layer), list(Rows()), list(Colour)[1].name, len(Colour),
          len({Block(), Block()}), Block()(torch.ones(1)).tolist(), Split()(8),
          Scaled(4).scale, Cache()[3], (Mask(6) & Mask(3) | Mask(8)).bits, Kind.SUM.value, Tally("aab").top(), Settings().scale,
          Failed("x").message, Stream([1, 2]).index, str(Act.GELU))
"""


def test_honest_classes_are_still_accepted():
    namespace, found = run(HONEST)
    assert found == []
    assert namespace["out"] == [3.0, 3.0]
    assert namespace["checks"] == ("red", True, 3.5, True, 1, True, "Layer()", [0.0, 1.0], "GREEN", 2, 2, [2.0], 4, 0.25, 6, 10, 2, "a", 0.5, "x", 0, "gelu")


def test_a_coroutine_of_the_files_runs_after_await_when_its_own_code_resumes_it():
    """The code after an `await` is checked for who resumed it, as after a `yield`: the file's own
    code driving its coroutine passes, and what `await` returned is checked."""
    source = (
        "async def inner():\n    return 2\nasync def outer():\n    return (await inner()) + 1\n"
        "c = outer()\ntry:\n    c.send(None)\nexcept StopIteration as e:\n    y = e.value\n"
    )
    namespace, found = run(source)
    assert found == [] and namespace["y"] == 3
