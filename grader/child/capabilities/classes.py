"""The file's own classes, and the classes library metaclasses build while it runs: what their
namespaces may hold.

A class's special names decide what numpy, torch and the interpreter do with its objects. The file's
classes may define the special methods the rules list (grader/rules.toml, [special_methods] define),
which checks.py enforces; here is what holds whatever built the class: no raw-memory special name
(numpy and torch read them on objects to find memory by address) answers from an object's own
dictionary, and a library metaclass whose __new__ is written in Python checks the namespace of every
class it builds while the submission runs. Which classes a class of the file's may derive from, and
what its namespace may hold under a special name or a name its library bases define, is below
(foreign_base, and Capabilities._check_entries in checks.py).
"""

import abc
import collections
import enum
import functools
import sys
import typing
from collections.abc import Callable
from types import CodeType, FunctionType, GetSetDescriptorType
from typing import Any, NoReturn

import numpy
import torch

from .slots import HEAP_TYPE, _dict, _dict_of, _flags_of, _getattr, _id, _isinstance, _module_of, _mro_of, _setattr, _str, _tuple, _type, _type_name, is_dunder

# Special names that hand numpy or torch a raw memory address or run code where the guard does not
# watch: no class may define them, whatever built it.
RAW_MEMORY_NAMES = frozenset(
    {"__array_interface__", "__array_struct__", "__cuda_array_interface__", "__dlpack__", "__dlpack_device__", "__buffer__", "__release_buffer__"}
)
# __getattr__ and __getattribute__ could hand out any of the above on demand; a class attribute named
# __dict__ makes `obj.__dict__` (read by library code such as functools.update_wrapper) the file's data.
# dataclasses' own code (replace, asdict, fields) reads the attributes __dataclass_fields__ names, unchecked.
DANGEROUS_CLASS_NAMES = RAW_MEMORY_NAMES | {"__getattr__", "__getattribute__", "__dict__", "__dataclass_fields__", "__dataclass_params__"}
CURRENT: list[Any] = []  # the Capabilities of the submission this process runs (one per process)


def check_library_metaclasses() -> None:
    """Every metaclass of the process whose __new__ is written in Python (abc.ABCMeta, enum's,
    typing's) builds classes from a namespace with the real type.__new__, which no check sees: a
    chain of library calls run in C (itertools.starmap over abc.ABCMeta.__new__) could build a class
    that hands numpy a raw address. Each such __new__ is wrapped, once per process, to refuse a
    namespace with a raw-memory special name first."""
    pending, seen = [type], set()
    while pending:
        for meta in type.__subclasses__(pending.pop()):
            if _id(meta) in seen:
                continue
            seen.add(_id(meta))
            pending.append(meta)
            new = _dict_of(meta).get("__new__")
            if _type(new) is staticmethod and not getattr(new.__func__, "checked", False) and _flags_of(meta) & HEAP_TYPE:
                _setattr(meta, "__new__", staticmethod(_checking_new(new.__func__)))


class ClassOnly:
    """Put under each raw-memory special name in every class of the file's: numpy and torch read
    those names on an instance, where its own __dict__ would answer first, and library code writes
    an instance's __dict__ with names of the file's choosing (functools.cached_property, copy's
    state). As a data descriptor it answers first: with what a class of the MRO defines (a
    library base class's own), never with what an instance holds."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is not None and CURRENT and self.name in (_getattr(obj, "__dict__", None) or ()):  # (no class of the file's defines __dict__)
            CURRENT[0].refuse(f"an object of the class {_type_name(_type(obj))} whose own __dict__ holds {self.name}, read by numpy or torch (raw memory)")
        for klass in _mro_of(owner if owner is not None else _type(obj)):
            value = _dict_of(klass).get(self.name, _ABSENT)
            if value is not _ABSENT and _type(value) is not ClassOnly:
                getter = _getattr(_type(value), "__get__", None)
                return value if getter is None else getter(value, obj, owner)
        raise AttributeError(self.name)

    def __set__(self, obj: Any, value: Any) -> NoReturn:
        raise AttributeError(f"{self.name} cannot be set on an object of the file's")

    def __delete__(self, obj: Any) -> NoReturn:
        raise AttributeError(f"{self.name} cannot be deleted on an object of the file's")


_ABSENT = object()
CLASS_ONLY = {name: ClassOnly(name) for name in RAW_MEMORY_NAMES}


def defines_raw_memory(namespace: Any) -> bool:
    """Whether a class's namespace defines a raw-memory special name (other than as ClassOnly), or
    has a key that is not a str itself: such a key's own __hash__ and __eq__ could say it is no such
    name when checked and one when numpy or torch looks the name up. No code of the file's runs here
    (each key's type is read before the key is looked up)."""
    return any(_type(key) is not _str or (key in RAW_MEMORY_NAMES and _type(namespace[key]) is not ClassOnly) for key in namespace)


def getter_of_the_file(namespace: Any, filename: str) -> bool:
    """Whether a namespace holds a __getattr__ or __getattribute__ that is not a library's own Python
    function (one the file wrote, or anything else): it could produce a raw-memory name when numpy
    asks. The file cannot compile code nor make a function another file's."""
    for key in ("__getattr__", "__getattribute__"):
        if key in namespace:
            value = namespace[key]
            if _type(value) is not FunctionType or value.__code__.co_filename == filename:
                return True
    return False


def dangerous_name(namespace: dict, filename: str) -> str:
    """What a namespace of a class a library metaclass builds while the submission runs defines
    that it may not ("" if nothing): a raw-memory special name, the dataclass fields, a key that is
    not a str itself (its own __hash__ and __eq__ could hide such a name from this very check), or a
    __getattr__ or __getattribute__ (which can produce a raw-memory name when numpy asks) that is not
    a Python function of a library's: torch's modules imported lazily build such classes (torch.vmap),
    and the file can neither compile code nor make a function another file's."""
    for key, value in _dict.items(namespace):
        if _type(key) is not _str:
            return "a key that is not a str itself"
        if key in ("__getattr__", "__getattribute__"):
            if getter_of_the_file({key: value}, filename):
                return key
        elif key in DANGEROUS_CLASS_NAMES and not (key == "__dict__" and _type(value) is GetSetDescriptorType):
            return key
    return ""


def _checking_new(original: Callable[..., Any]) -> Callable[..., Any]:
    def __new__(mcls: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
        namespace = args[2] if len(args) > 2 else None
        if CURRENT and issubclass(_type(namespace), _dict):  # (the type read, not isinstance: no __class__ of the file's answers)
            found = dangerous_name(_dict.copy(namespace), CURRENT[0].filename)
            if found:
                name = args[0] if _type(args[0]) is _str else "a class"
                CURRENT[0].refuse(f"a class ({name}) defining {found}, built by {_type_name(mcls)}")
        made = original(mcls, *args, **kwargs)
        if CURRENT and _isinstance(made, type) and _module_of(made) == CURRENT[0].module_name:
            CURRENT[0].own_class(made)  # the file's, even where C code called the metaclass: checked and guarded at once
        return made

    __new__.checked = True  # type: ignore[attr-defined]
    __new__.__wrapped__ = original  # type: ignore[attr-defined]
    return __new__


# -- what a class of the file's derives from, and what its namespace holds -----------------------------
#
# numpy's and torch's conversions walk a list through a pointer to its items while they call the
# special methods of each item (__len__, __getitem__, __iter__, __float__, __index__). Code that runs
# there and empties the list frees what they walk. A function of the file's that they call is
# refused where it starts (callers.py); these rules make sure nothing else of the file's choosing
# runs there: a special method of a class of the file's is a function of the file's, and the code of
# any other class such an object derives from reads, on the object, only what the file can set to
# its own functions and plain data.

# Built-in types whose C code reads no attribute of the object by name (not OrderedDict: its repr of a
# subclass calls self.items(); not defaultdict, whose missing key calls its factory where Counter's
# code looks one up), and library classes whose
# Python code reads only the object's special methods, entries their own classes define and, for an
# Enum, its bookkeeping (which no write may change: Capabilities.write).
PLAIN_BASES = (
    object, int, float, complex, str, bytes, list, tuple, dict, set, frozenset, type, collections.deque, collections.Counter,
)  # fmt: skip
LIBRARY_BASES = (
    torch.Tensor, torch.autograd.Function, numpy.ndarray, typing.Generic, typing.Protocol, abc.ABC, abc.ABCMeta,
    enum.Enum, enum.IntEnum, enum.StrEnum, enum.EnumType,
)  # fmt: skip
REVIEWED_MODULES = ("_collections_abc", "numbers")  # the ABCs of collections.abc and numbers: their methods use the object's special methods
# Python's exceptions whose C code trusts what their objects hold: UnicodeError's __str__ reads a
# byte at `object` + `start` whatever `object` is, and an exception group's split() calls self.derive.
ODD_EXCEPTIONS = (UnicodeError, BaseExceptionGroup)
# Names enum's own code calls on an Enum class (its _EnumDict refuses any other _sunder_ name in the body).
ENUM_HOOKS = frozenset({"_generate_next_value_", "_missing_", "_numeric_repr_", "_iter_member_", "_iter_member_by_value_", "_iter_member_by_def_"})
# Set by a library metaclass on every class it makes, whatever the body held (abc's, torch's FunctionMeta).
METACLASS_MADE = frozenset({"_abc_impl", "_backward_cls"})
INERT = (type(None), bool, int, float, complex, str, bytes)  # exactly these types: data no code of anyone's runs on
GETTERS = (property, functools.cached_property)  # call a function they hold when the attribute is read
# The comparisons functools.total_ordering puts in a class: each calls the class's own comparison.
TOTAL_ORDERING = frozenset(_id(function) for pairs in functools._convert.values() for _, function in pairs)  # type: ignore[attr-defined]


def _allowed_base_classes() -> list[type]:
    allowed = [*PLAIN_BASES, *(k for klass in LIBRARY_BASES for k in _mro_of(klass))]
    for module in REVIEWED_MODULES:
        allowed += [v for v in vars(sys.modules[module]).values() if _isinstance(v, type)]
    return allowed


ALLOWED_BASE_CLASSES = _allowed_base_classes()
ALLOWED_BASES = frozenset(_id(klass) for klass in ALLOWED_BASE_CLASSES)


def names_called(klass: type) -> frozenset[str]:
    """Every name the Python code of a library class's special methods may read, and of the methods
    of its MRO those names lead to (the names of their code, nested code included): what that code
    can read on an object of the file's."""
    found = _NAMES_CALLED.get(klass)
    if found is None:
        mro = [k for k in _mro_of(klass) if k is not object]
        names: set[str] = set()
        pending = [n for k in mro for n in _dict_of(k) if is_dunder(n)]
        seen: set[str] = set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            for k in mro:
                entry = _dict_of(k).get(name, _ABSENT)
                function = entry.__func__ if _type(entry) in (staticmethod, classmethod) else entry.fget if _type(entry) is property else entry
                if _type(function) is FunctionType:
                    codes = [function.__code__]
                    while codes:
                        code = codes.pop()
                        names.update(code.co_names)
                        pending += code.co_names
                        codes += [c for c in code.co_consts if _type(c) is CodeType]
        found = _NAMES_CALLED[klass] = frozenset(names)
    return found


_NAMES_CALLED: dict[type, frozenset[str]] = {}
# What the Python code of every library class a class of the file's may derive from can read on an
# object (torch's and numpy's classes count with every name: allowed.library_class).
ALL_NAMES_CALLED = frozenset().union(
    *(names_called(k) for k in ALLOWED_BASE_CLASSES if _flags_of(k) & HEAP_TYPE and _module_of(k).partition(".")[0] not in ("torch", "numpy"))
)


def foreign_base(cls: type, own: Callable[[type], bool]) -> Any:
    """The first class of cls's MRO that is neither the file's (own) nor one a class of the file's
    may derive from (None if there is none): a C type whose special methods call what its objects
    hold (map, itertools.starmap, functools.partial), or a library class whose Python methods
    read data the file sets (collections.UserList's .data, ChainMap's .maps)."""
    for klass in _mro_of(cls)[1:]:
        if own(klass) or _id(klass) in ALLOWED_BASES:
            continue
        if issubclass(klass, BaseException) and not _flags_of(klass) & HEAP_TYPE and not issubclass(klass, ODD_EXCEPTIONS):
            continue  # Python's own exceptions
        return klass
    return None


def is_sunder(name: str) -> bool:
    return len(name) > 2 and name[0] == name[-1] == "_" and name[1] != "_" and name[-2] != "_"


def inert(value: Any) -> bool:
    kind = _type(value)
    if kind is _tuple or kind is frozenset:
        return all(inert(item) for item in value)
    return kind in INERT
