"""Capabilities, not names: what the submission's code can reach is decided on the objects themselves.

The runner compiles the submission from the very text the grader checked, after `transform`
rewrites its syntax tree so that attribute reads and writes, subscripts, class statements, call
results, loop items, unpacking and pattern captures go through the checks of `Capabilities`, with
restricted built-ins. A refusal ends the run where it happens. What is refused and what this layer
assumes (no memory-corruption bug in CPython, torch or numpy): docs/threat-model.md.
"""

import ast
import builtins
import copy
import dataclasses
import enum
import fnmatch
import functools
import importlib
import keyword
import operator
import re
import sys
import typing
from collections.abc import Callable, Iterable
from types import (
    BuiltinFunctionType,
    CellType,
    CodeType,
    FrameType,
    FunctionType,
    GenericAlias,
    GetSetDescriptorType,
    MethodType,
    MethodWrapperType,
    ModuleType,
    TracebackType,
)
from typing import Any, NoReturn

PREFIX = "__mlm_"  # names the rewrite adds; a file may not use names starting with it
NAMES = ("getattr", "getitem", "write", "own_class", "check", "subject", "augmented_attribute", "augmented_item", "result", "items", "unpacked", "decorator")
GETATTR, GETITEM, WRITE, OWN_CLASS, CHECK, SUBJECT, AUGMENTED_ATTRIBUTE, AUGMENTED_ITEM, RESULT, ITEMS, UNPACKED, DECORATOR = (f"{PREFIX}{n}__" for n in NAMES)
BOUND = f"{PREFIX}bound__"

# Names the documented APIs of namedtuple and enum start with an underscore.
PUBLIC_PRIVATE_NAMES = frozenset({"_make", "_asdict", "_fields", "_replace", "_field_defaults", "_value_", "_name_", "_missing_"})
# Special names that hand numpy or torch a raw memory address or run code where the guard does not
# watch: a class (or a three-argument type()) may not define them.
RAW_MEMORY_NAMES = frozenset(
    {"__array_interface__", "__array_struct__", "__cuda_array_interface__", "__dlpack__", "__dlpack_device__", "__buffer__", "__release_buffer__"}
)
# __getattr__ and __getattribute__ could hand out any of the above on demand; a class attribute named
# __dict__ makes `obj.__dict__` (read by library code such as functools.update_wrapper) the file's data.
# dataclasses' own code (replace, asdict, fields) reads the attributes __dataclass_fields__ names, unchecked.
DANGEROUS_CLASS_NAMES = RAW_MEMORY_NAMES | {"__getattr__", "__getattribute__", "__dict__", "__dataclass_fields__", "__dataclass_params__"}
# Special methods the interpreter or a library calls with values the file did not choose (abc hands
# __subclasshook__ the real `type`): no class the file builds defines them.
CALLBACK_NAMES = frozenset(
    {"__subclasshook__", "__instancecheck__", "__subclasscheck__", "__init_subclass__", "__set_name__", "__class_getitem__", "__mro_entries__", "__prepare__"}
)
# The copy protocol: copy.deepcopy (which dataclasses.asdict runs on field values) calls them and
# builds an object, of any class, from what they return, its state written straight into its __dict__.
COPY_NAMES = frozenset({"__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__copy__", "__deepcopy__", "__slotnames__"})
BOUND_METHODS = (MethodType, BuiltinFunctionType, MethodWrapperType)  # made anew at each read: judged by what they are bound to
HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made at run time (a class statement, type()), not one of C
CLASS_LISTS = frozenset({"__mro__", "__bases__", "mro"})  # attributes whose values are classes in a list
RELAYS = ("__getattr__", "__getattribute__", "__setattr__", "__delattr__")  # in Python, they can pass names on
REFUSED_BUILTINS = ("open", "exec", "eval", "compile", "globals", "locals", "breakpoint", "input", "help", "exit", "quit", "bytearray", "memoryview")
MACHINERY = (FrameType, TracebackType, CodeType, CellType)

_mro_of = type.__dict__["__mro__"].__get__
_dict_of = type.__dict__["__dict__"].__get__
_type_name = type.__dict__["__name__"].__get__
_super_this = super.__dict__["__thisclass__"].__get__
_super_self_class = super.__dict__["__self_class__"].__get__
_CURRENT: list["Capabilities"] = []  # the capabilities of the submission this process runs
_module_of = type.__dict__["__module__"].__get__
_flags_of = type.__dict__["__flags__"].__get__
_hasattr = hasattr
_getattr, _setattr, _delattr, _isinstance, _type = getattr, setattr, delattr, isinstance, type
# An object's identity as a key: object.__hash__ is its address, rotated (one key per live object),
# read without the audit event id() raises and, a slot wrapper, without the two events a call of a
# built-in costs under the runtime guard's profile function.
_id = object.__hash__
_str, _tuple, _dict = str, tuple, dict


def _check_library_metaclasses() -> None:
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


class _ClassOnly:
    """Put under each raw-memory special name in every class of the file's: numpy and torch read
    those names on an instance, where its own __dict__ would answer first, and library code writes
    an instance's __dict__ with names of the file's choosing (functools.cached_property, copy's
    state). As a data descriptor it answers first: with what a class of the MRO defines (a
    library base class's own), never with what an instance holds."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is not None and _CURRENT and self.name in (_getattr(obj, "__dict__", None) or ()):  # (no class of the file's defines __dict__)
            _CURRENT[0].refuse(f"an object of the class {_type_name(_type(obj))} whose own __dict__ holds {self.name}, read by numpy or torch (raw memory)")
        for klass in _mro_of(owner if owner is not None else _type(obj)):
            value = _dict_of(klass).get(self.name, _ABSENT)
            if value is not _ABSENT and _type(value) is not _ClassOnly:
                getter = _getattr(_type(value), "__get__", None)
                return value if getter is None else getter(value, obj, owner)
        raise AttributeError(self.name)

    def __set__(self, obj: Any, value: Any) -> NoReturn:
        raise AttributeError(f"{self.name} cannot be set on an object of the file's")

    def __delete__(self, obj: Any) -> NoReturn:
        raise AttributeError(f"{self.name} cannot be deleted on an object of the file's")


_ABSENT = object()
_CLASS_ONLY = {name: _ClassOnly(name) for name in RAW_MEMORY_NAMES}


def _defines_raw_memory(namespace: Any) -> bool:
    """Whether a class's namespace defines a raw-memory special name (other than as _ClassOnly), or
    has a key that is not a str itself: such a key's own __hash__ and __eq__ could say it is no such
    name when checked and one when numpy or torch looks the name up. No code of the file's runs here
    (each key's type is read before the key is looked up)."""
    return any(_type(key) is not _str or (key in RAW_MEMORY_NAMES and _type(namespace[key]) is not _ClassOnly) for key in namespace)


def _getter_of_the_file(namespace: Any, filename: str) -> bool:
    """Whether a namespace holds a __getattr__ or __getattribute__ that is not a library's own Python
    function (one the file wrote, or anything else): it could produce a raw-memory name when numpy
    asks. The file cannot compile code nor make a function another file's."""
    for key in ("__getattr__", "__getattribute__"):
        if key in namespace:
            value = namespace[key]
            if _type(value) is not FunctionType or value.__code__.co_filename == filename:
                return True
    return False


def _dangerous_name(namespace: dict, filename: str) -> str:
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
            if _getter_of_the_file({key: value}, filename):
                return key
        elif key in DANGEROUS_CLASS_NAMES and not (key == "__dict__" and _type(value) is GetSetDescriptorType):
            return key
    return ""


def _checking_new(original: Callable[..., Any]) -> Callable[..., Any]:
    def __new__(mcls: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
        namespace = args[2] if len(args) > 2 else None
        if _CURRENT and issubclass(_type(namespace), _dict):  # (the type read, not isinstance: no __class__ of the file's answers)
            found = _dangerous_name(_dict.copy(namespace), _CURRENT[0].filename)
            if found:
                name = args[0] if _type(args[0]) is _str else "a class"
                _CURRENT[0].refuse(f"a class ({name}) defining {found}, built by {_type_name(mcls)}")
        made = original(mcls, *args, **kwargs)
        if _CURRENT and _isinstance(made, type) and _module_of(made) == _CURRENT[0].module_name:
            _CURRENT[0].own_class(made)  # the file's, even where C code called the metaclass: checked and guarded at once
        return made

    __new__.checked = True  # type: ignore[attr-defined]
    __new__.__wrapped__ = original  # type: ignore[attr-defined]
    return __new__


def _writable_types() -> tuple[type, ...]:
    """Objects of the allowed libraries whose public attributes a file may set."""
    import numpy
    import torch
    from torch.autograd.function import FunctionCtx

    return torch.Tensor, numpy.ndarray, FunctionCtx


WRITABLE = _writable_types()
TORCH_SIZE = __import__("torch").Size  # a tuple of ints, by construction


def _plain_copies() -> tuple[frozenset[type], frozenset[type]]:
    """The values dataclasses.asdict and astuple may copy (exactly these types, C types of the
    libraries: tensors, numpy's arrays and numbers, dtypes, devices), and numpy's among them, whose
    copies copy each object a value of an object dtype holds (a structured numpy.void's too)."""
    import numpy
    import torch

    numbers = {kind for kind in vars(numpy).values() if _isinstance(kind, type) and issubclass(kind, numpy.generic) and kind is not numpy.object_}
    numpy_values = frozenset({numpy.ndarray, *numbers})
    return frozenset({torch.Tensor, torch.dtype, torch.device, *numpy_values}), numpy_values


PLAIN_COPIES, NUMPY_VALUES = _plain_copies()
TENSOR, NDARRAY = WRITABLE[:2]  # torch.Tensor, numpy.ndarray
_TENSOR_NUMPY = TENSOR.numpy
# Containers whose items library code can take out unseen; each is read with its built-in type's own iterator.
_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))
CONTAINERS = (list, tuple, dict, set, frozenset, *_VIEWS)


def _contents_of(container: Any) -> Iterable[Any]:
    """The items of a container (a dict's keys and values), read in C: no method of a subclass runs."""
    kind = type(container)
    for base in CONTAINERS:
        if issubclass(kind, base):
            return [*dict.__iter__(container), *dict.values(container)] if base is dict else base.__iter__(container)
    return ()


def _unshared(value: Any) -> Any:
    """A numpy array copied, anything else as it is: memory shared between an array and a tensor
    takes numpy's writes without torch's version counter seeing them, so an index tensor autograd
    saved could be rewritten between the forward and the backward, whose kernels trust it
    (max_pool1d_with_indices, embedding_bag, segment_reduce: writes anywhere in memory)."""
    return value.copy() if _isinstance(value, NDARRAY) else value  # (and its subclasses)


def _copying_numpy(tensor: Any, *, force: bool = False) -> Any:
    """Tensor.numpy as the file gets it: a copy of the values, never a view of the tensor's memory."""
    return _TENSOR_NUMPY(tensor, force=force).copy()


def _unshare_numpy_conversions() -> None:
    """numpy.asarray(tensor) and every conversion numpy makes itself call Tensor.__array__, which
    returns a view of the tensor's memory (Tensor.numpy()): replaced once per process by one that
    returns a copy, before the runtime guard takes its picture of torch.Tensor. (torch.Tensor(array),
    the legacy constructor, still aliases a float32 array: replacing torch.Tensor.__new__ breaks
    torch's own checks of its signature. docs/threat-model.md, "Known limits".)"""
    original = TENSOR.__dict__["__array__"]
    if getattr(original, "copies", False):
        return

    def __array__(self: Any, dtype: Any = None) -> Any:
        return original(self, dtype).copy()

    __array__.copies = True  # type: ignore[attr-defined]
    TENSOR.__array__ = __array__


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name[:2] == "__" and name[-2:] == "__"


def _torch_internal(value: Any) -> bool:
    """torch's TorchScript and dispatcher classes (pybind11 types and their instances) and its
    operator objects: not tensor API, and ways to reach operators or compilers."""
    kind = _type(value)
    meta = value if _isinstance(value, type) else kind
    module = _type.__dict__["__module__"].__get__(kind)
    return _type_name(_type(meta)) == "pybind11_type" or (_isinstance(module, _str) and module.startswith("torch._ops"))


OWN_RULE = "this challenge forbids it: see the rules in the statement"  # a forbidden attribute the challenge's package added
BASE_RULE = "it reaches files, compilers, code, operators by name or raw memory"  # why the base policy forbids one


class Capabilities:
    """The checks behind the rewritten code and the restricted built-ins, for one submission."""

    def __init__(self, config: dict[str, Any], refuse: Callable[[str], NoReturn]) -> None:
        """config: the spec's policy lists (allowed_imports, allowed_submodules, forbidden_functions,
        forbidden_operators, forbidden_attributes, readable_dunders) and the submission's file name.
        refuse(what) records a finding and does not return (the child's ends the run)."""
        self.refuse = refuse
        self.filename: str = config["submission"]
        self.module_paths = frozenset(config["allowed_imports"]) | frozenset(config["allowed_submodules"])
        self.readable_dunders = frozenset(config["readable_dunders"])
        self.modules: dict[int, ModuleType] = {}
        for path in sorted(self.module_paths):
            try:
                module = importlib.import_module(path)
            except ImportError:
                continue
            self.modules[_id(module)] = module
        self.module_names = {key: module.__name__ for key, module in self.modules.items()}
        functions = config["forbidden_functions"]
        operators = re.compile("|".join(fnmatch.translate(p) for p in config["forbidden_operators"]) or "(?!)")
        self._forbidden_function = lambda name: name in functions or operators.match(name) is not None
        # A name read where the object cannot be judged (a dataclass's own code, a class pattern):
        # refused when it is a forbidden function's, matches a forbidden attribute's last part, or
        # is one whose value a read hands out checked item by item (mro() lists the real `type`).
        # One pattern for every last part: compiled once per process (re's cache holds it: the pool's
        # server makes one before it forks), where 58 fnmatch patterns each compiled at their first use
        # cost a child's first case about 10 ms.
        last_parts = re.compile("|".join(fnmatch.translate(p.rpartition(".")[2]) for p in config["forbidden_attributes"]) or "(?!)")
        self._last_part_forbidden = lambda name: last_parts.match(name) is not None
        self._unjudged_name_refused = lambda name: name in functions or name in CLASS_LISTS or last_parts.match(name) is not None
        self._attributes = tuple(config["forbidden_attributes"])
        self._challenge_attributes = tuple(config.get("challenge_attributes", ()))  # the package's own (grader/spec.py merge_policy)
        self._type_paths = self._public_type_paths()
        self._name_verdicts: dict[str, bool] = {}  # name -> whether some rule may refuse it
        self.own_ids: set[int] = set()
        self._own: list[type] = []  # keeps the classes alive, so that their ids stay theirs
        self._kinds: dict[int, str] = {}  # id of a class -> why its instances are refused ("" if they are not)
        self._kept_kinds: list[type] = []
        self._raw_classes: dict[int, bool] = {}  # id of a class -> whether it hands out raw memory
        self._checked: dict[int, type] = {}  # id of a metaclass -> its checked stand-in
        self._checked_ids: set[int] = set()
        self._namespaces: dict[int, Any] = {}  # id of a module's globals -> the globals (kept: no other object takes its id)
        self._namespaces_seen = -1
        self.module_name = ""  # the submission's module, once namespace() is made
        self._substitutes: dict[int, Any] = {}  # id of a library function -> the checked version handed out instead
        # id of an object a forbidden attribute names (torch.load, typing.get_type_hints) -> its path: refused
        # wherever it turns up, also where no path leads (a copy of a module's namespace in a function's __dict__)
        self._refused_ids = _objects_named(self.modules, config["forbidden_attributes"])
        self._reachable_ids = _reachable(self.modules, config["forbidden_attributes"])
        self._substituted_kinds: set[int] = {kind for kind, _ in self._refused_ids.values()}  # ids of their classes, and below
        self._substituted_kinds |= {_id(kind) for kind in BOUND_METHODS}  # judged as the read of their name (_by_identity)
        _unshare_numpy_conversions()  # (process-wide, once: numpy's own conversions are out of the checks' sight)
        for original, replacement in self._make_substitutes():
            self._substitute(original, replacement)
        self.guarded_type = self._guarded_type()
        restricted = self.builtins()
        for name in (*REFUSED_BUILTINS, "getattr", "hasattr", "setattr", "delattr", "vars", "__import__", "__build_class__"):
            self._substitute(getattr(builtins, name), restricted[name])

    def _substitute(self, original: Any, replacement: Any) -> None:
        self._substitutes[_id(original)] = replacement
        self._substituted_kinds.add(_id(_type(original)))

    def _make_substitutes(self) -> list[tuple[Any, Any]]:
        """Library functions that take attribute names as data, handed out as versions that take
        only their documented defaults: functools.wraps and update_wrapper copy the attributes they
        are told to (`assigned=("__globals__",)` would copy another function's globals). Also, the
        functional API of enum (Enum("E", names)) builds a class from names: its names are checked."""
        caps = self

        def check_defaults(assigned: Any, updated: Any) -> None:
            if assigned is not functools.WRAPPER_ASSIGNMENTS or updated is not functools.WRAPPER_UPDATES:
                caps.refuse("functools.wraps or functools.update_wrapper with attribute names of the file's choosing")

        def update_wrapper(wrapper: Any, wrapped: Any, assigned: Any = functools.WRAPPER_ASSIGNMENTS, updated: Any = functools.WRAPPER_UPDATES) -> Any:
            """functools.update_wrapper with its defaults, every value copied checked (the
            __dict__ of a module is its globals)."""
            check_defaults(assigned, updated)
            if _isinstance(wrapped, ModuleType):
                caps.refuse("functools.wraps or functools.update_wrapper of a module")
            for name in functools.WRAPPER_ASSIGNMENTS:
                try:
                    value = _getattr(wrapped, name)
                except AttributeError:
                    continue
                _setattr(wrapper, name, caps.check_value(value, f"the attribute {name}"))
            for key, value in _dict(_getattr(wrapped, "__dict__", {})).items():
                if _type(key) is not _str or not key.isidentifier() or _is_dunder(key):  # as a write would be refused
                    caps.refuse(f"functools.wraps or functools.update_wrapper copying the attribute {key!r}")
                _getattr(wrapper, "__dict__")[key] = caps.check_value(value, f"the attribute {key}")
            wrapper.__wrapped__ = wrapped
            return wrapper

        def wraps(wrapped: Any, assigned: Any = functools.WRAPPER_ASSIGNMENTS, updated: Any = functools.WRAPPER_UPDATES) -> Any:
            check_defaults(assigned, updated)
            return functools.partial(update_wrapper, wrapped=wrapped)

        _CURRENT[:] = [self]  # one submission per process: the patch below asks the latest
        create = enum.EnumType.__dict__["_create_"]  # a method of the metaclass: cls is the enum
        if not getattr(create, "checked", False):

            def _create_(cls: Any, class_name: Any, names: Any, **kwargs: Any) -> Any:
                """The members as enum will read them, each checked: a str, or a pair (a tuple or a
                list) whose name is a str, each of exactly those types, read once; enum is handed
                that very list (a member of another type could give enum another name than it
                gave this check)."""
                if _type(names) is _str:
                    members, checked = names.replace(",", " ").split(), names
                elif _type(names) is _dict:
                    members, checked = list(_dict.keys(names)), names
                else:
                    checked = []
                    for member in names:
                        if _type(member) is _str:
                            checked.append(member)
                        elif (_type(member) is _tuple or _type(member) is list) and len(member) == 2:
                            checked.append((member[0], member[1]))
                        else:
                            _CURRENT[0].refuse("enum's functional API with a member that is neither a name nor a (name, value) pair")
                    members = [member if _type(member) is _str else member[0] for member in checked]
                for name in members:
                    if _type(name) is not _str or name.startswith("_"):
                        _CURRENT[0].refuse(f"enum's functional API with the member name {name if _type(name) is _str else 'of another type than str'!r}")
                return create(cls, class_name, checked, **kwargs)

            _create_.checked = True  # type: ignore[attr-defined]
            enum.EnumType._create_ = _create_  # type: ignore[method-assign]

        _check_library_metaclasses()

        def type_new(mcs: Any, *args: Any, **kwargs: Any) -> Any:
            """type.__new__ (reached as super(type, type).__new__): a class built from a namespace
            is checked as type() checks it, and is the file's own."""
            if len(args) != 3:
                return caps.check_value(type.__new__(mcs, *args, **kwargs), "what type.__new__ returned")
            namespace = caps._file_namespace(args[0], args[2])
            return caps.own_class(type.__new__(mcs, args[0], args[1], namespace, **kwargs))

        def dataclass(cls: Any = None, /, **kwargs: Any) -> Any:
            """dataclasses.dataclass, once the class's field names are checked to be names:
            dataclasses pastes them into code it compiles itself."""

            def wrap(klass: Any) -> Any:
                fields = _dict_of(klass).get("__annotations__", {}) if _isinstance(klass, type) else {}
                for name in fields:
                    if _type(name) is not _str or not name.isidentifier() or keyword.iskeyword(name) or _is_dunder(name):
                        caps.refuse(f"a dataclass field named {name!r} (dataclasses compiles its fields' names into code)")
                    if caps._unjudged_name_refused(name):  # dataclasses' own code (asdict, replace, __match_args__) reads fields unchecked
                        caps.refuse(f"a dataclass field named {name!r}, a name the rules refuse on some objects (call the field something else)")
                checked = {
                    *fields,
                    *(n for base in (_mro_of(klass)[1:] if _isinstance(klass, type) else ()) for n in _dict_of(base).get("__dataclass_fields__", {})),
                }
                made = dataclasses.dataclass(klass, **kwargs)
                # Again on what dataclasses made: the file's own code (a default's descriptor) runs while it works
                # and could change the annotations it reads after the check above.
                made_fields = _dict_of(made).get("__dataclass_fields__", {}) if _isinstance(made, type) else {}
                names = [*made_fields, *(_field_name(field) for field in made_fields.values()), *_dict_of(made).get("__match_args__", ())]
                for name in names:
                    if _type(name) is not _str or name not in checked or caps._unjudged_name_refused(name):
                        caps.refuse(f"a dataclass field named {name!r} that was not among the class's annotations when it was checked")
                return made

            return wrap if cls is None else wrap(cls)

        def fields_checked(obj: Any, function: str) -> None:
            """Before dataclasses' own code reads obj's fields by their names (getattr(obj, f.name)):
            each field along the class's MRO is a dataclasses.Field under its own name, one the
            rules allow. A field put in a class's __dataclass_fields__ after the class was checked
            would otherwise name any attribute."""
            kind = obj if issubclass(_type(obj), type) else _type(obj)  # (the type read: no __class__ of the file's answers)
            for klass in _mro_of(kind):
                fields = _dict_of(klass).get("__dataclass_fields__")
                if fields is None:
                    continue
                if _type(fields) is not _dict:
                    caps.refuse(f"dataclasses.{function} of a class whose __dataclass_fields__ dataclasses did not make")
                for key, field in _dict.items(fields):
                    name = _field_name(field)
                    if _type(key) is not _str or _type(name) is not _str or name != key or not name.isidentifier() or _is_dunder(name):
                        shown = repr(key) if _type(key) is _str else "whose name is not a str itself"
                        caps.refuse(f"dataclasses.{function} of a class with a field {shown} that dataclasses did not make")
                    if caps._unjudged_name_refused(name):
                        caps.refuse(f"dataclasses.{function} of a class with a field named {name!r}, a name the rules refuse on some objects")

        def reading_fields(function: Any) -> Any:
            @functools.wraps(function)
            def checked(obj: Any, *args: Any, **kwargs: Any) -> Any:
                fields_checked(obj, function.__name__)
                return caps.check_value(function(obj, *args, **kwargs), f"what dataclasses.{function.__name__} returned")

            return checked

        def plain_copy(obj: Any, factory: Any, as_dict: bool, function: str) -> Any:
            """What dataclasses' _asdict_inner or _astuple_inner makes of obj, without copy.deepcopy
            of values that are not plain: deepcopy runs the copy protocol of any object (looked up on
            the instance too, and torch's Tensor.__deepcopy__ reads the attributes a subclass lists),
            building objects from what it returns, out of the checks' sight. A value no plain copy
            is known for is refused. Types are read with type(): no __class__ of the file's answers."""
            kind = _type(obj)
            if _hasattr(kind, "__dataclass_fields__") and not issubclass(kind, type):
                fields_checked(obj, function)
                values = [(f.name, plain_copy(_getattr(obj, f.name), factory, as_dict, function)) for f in dataclasses.fields(kind)]
                return factory(values if as_dict else [value for _, value in values])
            if issubclass(kind, _tuple) and _hasattr(obj, "_fields"):
                return kind(*[plain_copy(v, factory, as_dict, function) for v in _tuple.__iter__(obj)])
            if issubclass(kind, (list, _tuple)):
                return kind(plain_copy(v, factory, as_dict, function) for v in [*kind.__iter__(obj)])
            if issubclass(kind, _dict):
                return kind((plain_copy(k, factory, as_dict, function), plain_copy(v, factory, as_dict, function)) for k, v in [*_dict.items(obj)])
            if copy._deepcopy_dispatch.get(kind) is copy._deepcopy_atomic or issubclass(kind, (type, enum.Enum)):
                return obj  # what deepcopy returns for these: the object itself
            if kind is TENSOR and not _getattr(obj, "__dict__", None):
                return tensor_copy(obj, function)
            if kind in PLAIN_COPIES and kind is not TENSOR and not (kind in NUMPY_VALUES and obj.dtype.hasobject):
                return copy.deepcopy(obj)  # an array or number of numpy's holding no objects, a dtype or device of torch's (no __dict__ of their own)
            caps.refuse(f"dataclasses.{function} of a field holding a {_type_name(kind)} (it would copy it with copy.deepcopy, out of the checks' sight)")

        def tensor_copy(tensor: Any, function: str) -> Any:
            """What deepcopy makes of a plain tensor (a leaf: the same values, requires_grad and a
            copy of its .grad), without Tensor.__deepcopy__, which hands its storage to methods of
            the tensors it copies (a .grad of a subclass of the file's overrides set_)."""
            if not tensor.is_leaf:
                raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment")
            grad = tensor.grad
            if grad is not None and (_type(grad) is not TENSOR or _getattr(grad, "__dict__", None)):
                caps.refuse(f"dataclasses.{function} of a tensor whose .grad is a {_type_name(_type(grad))} (only a plain tensor's copy is known)")
            copied = tensor.detach().clone().requires_grad_(tensor.requires_grad)
            if grad is not None:
                copied.grad = grad.detach().clone()
            return copied

        def copying_fields(function: Any, as_dict: bool) -> Any:
            factory_name = "dict_factory" if as_dict else "tuple_factory"

            @functools.wraps(function)
            def checked(obj: Any, **kwargs: Any) -> Any:
                factory = kwargs.pop(factory_name, _dict if as_dict else _tuple)
                if kwargs:
                    raise TypeError(f"{function.__name__}() got an unexpected keyword argument {next(iter(kwargs))!r}")
                if not (_hasattr(_type(obj), "__dataclass_fields__") and not issubclass(_type(obj), type)):
                    raise TypeError(f"{function.__name__}() should be called on dataclass instances")
                return caps.check_value(plain_copy(obj, factory, as_dict, function.__name__), f"what dataclasses.{function.__name__} returned")

            return checked

        def get_origin(tp: Any) -> Any:
            """typing.get_origin, its answer handed out as a read value is: typing.Type's origin is
            the real `type`."""
            return caps.check_value(typing.get_origin(tp), "what typing.get_origin returned")

        torch = sys.modules["torch"]

        def from_numpy(array: Any) -> Any:
            return torch.from_numpy(_unshared(array))

        def as_tensor(data: Any, *args: Any, **kwargs: Any) -> Any:
            return torch.as_tensor(_unshared(data), *args, **kwargs)

        def asarray(obj: Any, *args: Any, **kwargs: Any) -> Any:
            return torch.asarray(_unshared(obj), *args, **kwargs)

        return [
            (torch.from_numpy, from_numpy),
            (torch.as_tensor, as_tensor),
            (torch.asarray, asarray),
            (_TENSOR_NUMPY, _copying_numpy),
            (functools.update_wrapper, update_wrapper),
            (functools.wraps, wraps),
            (dataclasses.dataclass, dataclass),
            (typing.get_origin, get_origin),
            *((function, reading_fields(function)) for function in (dataclasses.replace, dataclasses.fields)),
            (dataclasses.asdict, copying_fields(dataclasses.asdict, as_dict=True)),
            (dataclasses.astuple, copying_fields(dataclasses.astuple, as_dict=False)),
            (type.__new__, type_new),
        ]

    # -- what the file owns ---------------------------------------------------------------------

    def _public_type_paths(self) -> dict[int, str]:
        """id of each public class of the allowed modules -> its dotted path (torch.UntypedStorage)."""
        paths: dict[int, str] = {}
        for module in self.modules.values():
            for name, value in vars(module).items():
                if not name.startswith("_") and _isinstance(value, type):
                    paths.setdefault(_id(value), f"{module.__name__}.{name}")
        return paths

    def own_class(self, cls: Any) -> Any:
        """Mark a class as the file's own (its private names are its business), after checking
        that it defines no special name that hands out raw memory, and that no class it derives
        from passes unknown attribute reads or writes on to another object (typing's aliases do:
        a private name of the file's own would reach the alias's origin)."""
        if _isinstance(cls, type) and _id(cls) not in self.own_ids:
            self._check_namespace(_type_name(cls), _dict_of(cls))
            if super in _mro_of(cls):
                self.refuse(f"a class ({_type_name(cls)}) derived from super (its lookups are another class's)")
            for klass in _mro_of(cls)[1:]:
                if not self._is_own_class(klass):
                    relays = [n for n in RELAYS if _type(_dict_of(klass).get(n)) is FunctionType]
                    if relays:
                        self.refuse(f"a class ({_type_name(cls)}) derived from {_type_name(klass)}, whose {relays[0]} passes attributes on to another object")
            if not issubclass(cls, type):  # (a class's own namespace is checked: no metaclass needs them)
                for name, guard in _CLASS_ONLY.items():
                    _type.__setattr__(cls, name, guard)  # type's own: no __setattr__ of a metaclass runs
            self.own_ids.add(_id(cls))
            self._own.append(cls)
        return cls

    def _is_own_class(self, klass: type) -> bool:
        """A class statement of the file's, or a class made at the file's call without one (a
        namedtuple, typing.NamedTuple, a class the real `type` built): its module is the file's.
        Such a class is checked as a class statement's is (own_class) the first time it is judged
        own, whatever built it."""
        if _id(klass) in self.own_ids:
            return True
        if _module_of(klass) != self.module_name:
            return False
        self.own_class(klass)
        return True

    def _check_namespace(self, name: Any, namespace: Any) -> None:
        for key in namespace:
            if _type(key) is not _str:  # its own __hash__ and __eq__ could answer a lookup for another name later
                self.refuse(f"a class ({name}) built from a namespace with a key that is not a str itself")
            if key == "__dict__" and _type(namespace[key]) is GetSetDescriptorType:
                continue  # the instances' own dictionary, which the interpreter puts in every class it builds
            if _type(key) is _str and key in CALLBACK_NAMES:
                self.refuse(f"a class ({name}) defining {key} (the interpreter calls it with values the checks never see)")
            if _type(key) is _str and key in COPY_NAMES:
                self.refuse(f"a class ({name}) defining {key} (copy builds objects from what it returns, out of the checks' sight)")
            if _type(key) is _str and key in DANGEROUS_CLASS_NAMES:
                why = "it could hand numpy or torch a raw memory address, or pass attributes on"
                if key.startswith("__dataclass"):
                    why = "dataclasses' own code reads the attributes it names"
                self.refuse(f"a class ({name}) defining {key} ({why})")
        match_args = namespace.get("__match_args__", ())
        if _type(match_args) is not _tuple or any(_type(a) is not _str or a.startswith("_") for a in match_args):
            self.refuse(f"__match_args__ of the class {name} naming private or special attributes")
        module = namespace.get("__module__", self.module_name)
        if module != self.module_name:
            self.refuse(f"a class ({name}) claiming to belong to the module {module!r}")

    def _is_own_function(self, obj: Any) -> bool:
        return _type(obj) is FunctionType and obj.__code__.co_filename == self.filename

    def _owner(self, obj: Any, name: str) -> bool | None:
        """Whether `name` on obj is the file's own: found first in a class the file defined, or an
        instance attribute of an instance of one (True); found in someone else's class (False);
        None when neither says (not found at all on an object the file does not own)."""
        if _isinstance(obj, super):
            mro = _mro_of(_super_self_class(obj) or _super_this(obj))
            mro = mro[mro.index(_super_this(obj)) + 1 :] if _super_this(obj) in mro else mro
            instance = False
        elif _isinstance(obj, type):  # a class: its own chain, then its metaclass's (EnumType._convert_)
            mro, instance = (*_mro_of(obj), *_mro_of(_type(obj))), False
        else:
            if self._is_own_function(obj):
                return True
            mro, instance = _mro_of(_type(obj)), True
        for klass in mro:
            if name in _dict_of(klass):
                return self._is_own_class(klass)
        if instance and any(self._is_own_class(klass) for klass in mro):
            return True
        return None

    # -- reading ----------------------------------------------------------------------------------

    def _path(self, obj: Any, name: str) -> str:
        """The dotted path forbidden_attributes patterns are written against."""
        if _isinstance(obj, ModuleType):
            owner = self.module_names.get(_id(obj), "module")
        else:
            owner = next((self._type_paths[_id(k)] for k in _mro_of(obj if _isinstance(obj, type) else _type(obj)) if _id(k) in self._type_paths), "object")
        return f"{owner}.{name}"

    def _may_be_refused(self, name: str) -> bool:
        # (subscripts, not .get(): under the runtime guard's profile function a call of a C function costs two events)
        try:
            return self._name_verdicts[name]
        except KeyError:
            verdict = self._forbidden_function(name) or self._last_part_forbidden(name)
            self._name_verdicts[name] = verdict
            return verdict

    def check_name(self, obj: Any, name: str) -> None:
        """Refuse reading `name` on obj if the rules say so (the value is checked afterwards). The
        object itself is checked too, should it have come back unchecked (from a call, say)."""
        try:
            verdict = self._kinds[_id(_type(obj))]
        except KeyError:
            verdict = None
        if verdict is None or (verdict and verdict != "class"):
            self.check_value(obj, "an object")
        if name[:1] == "_":
            if _is_dunder(name):
                if name not in self.readable_dunders:
                    self.refuse(f"the special attribute {name}")
                return
            owner = self._owner(obj, name)
            if name in PUBLIC_PRIVATE_NAMES or owner or (owner is None and self._owned_somewhere(obj)):
                return
            self.refuse(f"the private attribute {self._path(obj, name)}")
        if self._may_be_refused(name) and not self._owner(obj, name) and _hasattr(obj, name):  # a missing name fails as itself
            path = self._path(obj, name)
            if self._forbidden_function(name):  # worded as the runtime guard words the same use
                tensor = path.startswith("torch.Tensor.") and not _isinstance(obj, type)
                self.refuse(f"the Tensor method .{name}" if tensor else f"the function {path}")
            if any(fnmatch.fnmatchcase(path, pattern) for pattern in self._attributes):
                own = any(fnmatch.fnmatchcase(path, pattern) for pattern in self._challenge_attributes)
                why = OWN_RULE if own else BASE_RULE
                self.refuse(f"{path} ({why})")

    def _owned_somewhere(self, obj: Any) -> bool:
        """Whether a private name not found on obj may still be its own (an own instance or class)."""
        if _isinstance(obj, super):
            return False
        kind = obj if _isinstance(obj, type) else _type(obj)
        return self._is_own_function(obj) or any(self._is_own_class(k) for k in _mro_of(kind))

    def check_value(self, value: Any, what: str, line: int = 0, shallow: bool = False) -> Any:
        """Refuse a value that reaches the interpreter or the grader. Judged by its class, looked up
        by identity (a class of the file's cannot answer for another); a container with its items
        (shallow: without them, for the walk over them)."""
        kind = _type(value)
        kind_id = _id(kind)
        try:
            verdict = self._kinds[kind_id]
        except KeyError:
            verdict = self._judge_kind(kind, value)
            self._kinds[kind_id] = verdict
            self._kept_kinds.append(kind)
        if verdict == "":  # the most common: a tensor, a number (the substitutes are functions)
            return self._by_identity(value, what) if kind_id in self._substituted_kinds else value
        if _id(value) in self._refused_ids:  # a class or an allowed module a forbidden attribute names
            self.refuse(f"{what}, {self._refused_ids[_id(value)][1]} ({BASE_RULE})")
        if verdict == "class":  # a class: a metaclass is handed out as its checked stand-in
            if _module_of(value) == self.module_name:
                self._is_own_class(value)  # checked as the file's own, whatever built it
            if self._raw_memory_class(value):
                self.refuse(f"{what}, the class {_type_name(value)}, which hands numpy or torch a raw memory address")
            return self.checked_metaclass(value) if issubclass(value, type) else value
        if verdict == "container":
            if kind is _dict and _id(value) in self._module_namespaces():
                self.refuse(f"{what}, the globals of a module")
            if not shallow:
                self._check_contents(value, what)
            return value
        if verdict == "module":
            if _id(value) not in self.modules:
                self.refuse(f"{what}, a module outside the allowed list")
        elif verdict:
            self.refuse(f"{what}, {verdict}")
        return self._substitutes.get(_id(value), value)

    def _check_contents(self, container: Any, what: str) -> None:
        """Every item of a list, tuple, dict, set or dict view, and of the containers inside it, judged
        as it would be taken out: library code takes items out where no check sees them (f(*items),
        functools.partial, map), so a container holding what a read would hand out as a stand-in
        (the real `type`, the real built-ins) or refuse is refused. Read with the built-in types' own
        iterators, so no method of a subclass runs; a walk with a stack, each container once."""
        seen = {_id(container)}
        stack = [container]
        while stack:
            inner = stack.pop()
            for item in [*_contents_of(inner)]:
                if self.check_value(item, what, shallow=True) is not item:
                    shown = _type_name(item) if _isinstance(item, type) else _getattr(item, "__qualname__", _type_name(_type(item)))
                    self.refuse(f"{what}, a container holding {shown}, which the file may use only as an attribute read hands it out (read it that way)")
                if self._kinds[_id(_type(item))] == "container" and _id(item) not in seen:
                    seen.add(_id(item))
                    stack.append(item)

    def _by_identity(self, value: Any, what: str) -> Any:
        """A value of a class some substituted or refused object has: its stand-in, refused, or itself.
        A bound method is made anew at each read, so no identity names it: it is judged as the read
        of its name on the object it is bound to (library code hands out `tensor.untyped_storage`
        read where no check saw it: torch's deepcopy reads the names a class's __slotnames__ lists),
        and a bound Python function by the function's identity."""
        key = _id(value)
        kind = _type(value)
        for named in (key, _id(value.__func__) if kind is MethodType else key):  # a bound Python function: its function's too
            if named in self._refused_ids:
                self.refuse(f"{what}, {self._refused_ids[named][1]} ({BASE_RULE})")
        if kind is MethodType:
            self.check_value(value.__self__, f"{what}, a method of an object that is")  # a storage's resize_
        elif kind is BuiltinFunctionType or kind is MethodWrapperType:
            bound_to = value.__self__
            if _type(bound_to) is ModuleType:  # a C function of a module: an allowed path must lead to it, or its module be allowed
                if key not in self._reachable_ids and _id(bound_to) not in self.modules and bound_to is not builtins:
                    self.refuse(f"{what}, the function {_getattr(bound_to, '__name__', 'module')}.{value.__name__}, which no allowed path leads to")
            elif bound_to is not None:
                name = value.__name__
                try:  # (a subscript, not a call: the common case costs the runtime guard's profile function nothing)
                    maybe = name[:1] == "_" or self._name_verdicts[name]
                except KeyError:
                    maybe = True
                if maybe:
                    self.check_name(bound_to, name)
                if name == "numpy" and _isinstance(bound_to, TENSOR):  # tensor.numpy, made anew at each read: no id names it
                    return functools.partial(_copying_numpy, bound_to)
        return self._substitutes.get(key, value)

    def _module_namespaces(self) -> dict[int, Any]:
        """The namespaces of every module loaded so far (a function's globals are one of them), by
        id. Each is kept, so that a dict made after its module is gone cannot take its id."""
        if len(sys.modules) != self._namespaces_seen:
            for module in list(sys.modules.values()):
                namespace = getattr(module, "__dict__", None)
                if _type(namespace) is _dict:
                    self._namespaces[_id(namespace)] = namespace
            self._namespaces_seen = len(sys.modules)
        return self._namespaces

    def _judge_kind(self, kind: type, value: Any) -> str:
        if kind is not TORCH_SIZE and issubclass(kind, CONTAINERS):
            return "container"
        if issubclass(kind, type) and not _torch_internal(value):
            return "class"
        if issubclass(kind, ModuleType):
            return "module"
        if issubclass(kind, MACHINERY):
            return f"Python's machinery ({_type_name(kind)}), which leads into the grader's own code"
        if _torch_internal(value):
            return "part of torch's TorchScript and dispatcher internals"
        if self._raw_memory_class(kind):
            return f"an object of the class {_type_name(kind)}, which hands numpy or torch a raw memory address"
        for klass in _mro_of(kind):  # an object of a class the rules refuse (a storage torch's deepcopy hands out)
            if _id(klass) in self._refused_ids:
                return f"an object of the class {self._refused_ids[_id(klass)][1]} ({BASE_RULE})"
        return ""

    def _raw_memory_class(self, cls: type) -> bool:
        """Whether a class made at run time (not a public class of the allowed modules, nor one of
        C) defines, or inherits from such a class, a special name that hands numpy or torch a raw
        memory address, or a __getattr__ of the file's that could produce one: one that no check saw
        being built."""
        known = self._raw_classes.get(_id(cls))
        if known is None:
            known = any(
                _flags_of(k) & HEAP_TYPE
                and _id(k) not in self._type_paths
                and (_defines_raw_memory(_dict_of(k)) or _getter_of_the_file(_dict_of(k), self.filename))
                for k in _mro_of(cls)
            )
            self._raw_classes[_id(cls)] = known
            self._kept_kinds.append(cls)  # its id stays its own
        return known

    def _file_namespace(self, name: Any, namespace: Any) -> Any:
        """A copy of the namespace of a class the file builds without a class statement, checked,
        with the file's module as its module unless it names one (which the check refuses)."""
        if not _isinstance(namespace, _dict) or self._owned_somewhere(namespace):
            # a mapping of the file's own could show the check other keys than it gives the class
            self.refuse(f"a class ({name}) built from a namespace that is not a dict of the standard library's")
        if _type(namespace) is _dict:
            namespace = _dict.copy(namespace)
            namespace.setdefault("__module__", self.module_name)
        self._check_namespace(name, _dict.copy(namespace))  # read as the interpreter reads it, in C
        return namespace

    def checked_metaclass(self, meta: type) -> type:
        """A subclass of the metaclass `meta` that checks the namespace of every class it builds
        (abc.ABCMeta("X", (), namespace) builds a class with no class statement), made once."""
        if meta is type:
            return self.guarded_type  # never the real `type`: a class it built would not be checked
        if self.guarded_type in _mro_of(meta) or _id(meta) in self._checked_ids:
            return meta  # derived from the `type` the file sees, which checks
        checked = self._checked.get(_id(meta))
        if checked is None:
            caps = self

            def __new__(mcs: type, name: Any, bases: Any, namespace: Any, /, **kwargs: Any) -> Any:  # noqa: N807
                namespace = caps._file_namespace(name, namespace)
                return caps.own_class(meta.__new__(mcs, name, bases, namespace, **kwargs))

            try:
                checked = _type(_type_name(meta), (meta,), {"__new__": __new__, "__module__": meta.__module__, "__qualname__": meta.__qualname__})
            except TypeError:  # numpy's _DTypeMeta, say: its classes are built in C, where no check reaches
                self.refuse(f"the metaclass {_type_name(meta)}, which builds classes where they cannot be checked")
            self._checked[_id(meta)] = checked
            self._checked_ids.add(_id(checked))
            self._kept_kinds += [meta, checked]
        return checked

    def getattr(self, obj: Any, name: str, line: int = 0) -> Any:
        """obj.name, through check_name and checked_attribute. The common read is decided here as
        they would decide it, in this one call (under the runtime guard's profile function each call
        of a Python function costs two profile events and an audit event): a public name no rule may
        refuse, on a tensor, number or class, or on an allowed module; its value of a kind judged
        harmless, or a method of obj written in C and named `name`."""
        try:
            owner = self._kinds[_id(_type(obj))]
            common = (
                name[:1] != "_"
                and not self._name_verdicts[name]
                and (owner == "" or owner == "class" or (owner == "module" and _id(obj) in self.modules and _id(obj) not in self._refused_ids))
            )
        except KeyError:  # a name or a class not judged yet
            common = False
        if not common:
            self.check_name(obj, name)
        value = _getattr(obj, name)
        if common and name not in CLASS_LISTS:
            kind = _type(value)
            kind_id = _id(kind)
            try:
                harmless = self._kinds[kind_id] == ""
            except KeyError:
                harmless = False
            if harmless and kind_id not in self._substituted_kinds:
                return value
            # what _by_identity decides for obj's own C method read by its own name (x.view, math.sqrt)
            if harmless and kind is BuiltinFunctionType and value.__self__ is obj and value.__name__ == name and name != "numpy":
                key = _id(value)
                if key not in self._refused_ids and key not in self._substitutes:
                    return value
        return self.checked_attribute(name, value, obj)

    @staticmethod
    def _metaclass_side(obj: Any) -> bool:
        """Whether obj is a metaclass, or super() over one (whose __new__ builds classes)."""
        if _isinstance(obj, super):
            return issubclass(_super_this(obj), type)
        return _isinstance(obj, type) and issubclass(obj, type)

    def checked_attribute(self, name: str, value: Any, obj: Any = None) -> Any:
        """The value read as the attribute `name`, checked (its name was checked before the read)."""
        if name == "__new__" and _type(value) is BuiltinFunctionType and value is not type.__new__ and self._metaclass_side(obj):
            self.refuse(f"the __new__ of the metaclass {_type_name(obj if _isinstance(obj, type) else _type(obj))}, written in C")
        value = self.check_value(value, f"the attribute {name}")
        return self._class_list(name, value) if name in CLASS_LISTS else value

    def _class_list(self, name: str, value: Any) -> Any:
        """A class's __mro__ and __bases__, and what its mro() returns, hold classes (a metaclass's,
        the real `type`): each is handed out as a class read is (checked_metaclass)."""
        if name != "mro":
            return _tuple(self.check_value(v, "a class of __mro__ or __bases__") for v in value) if _type(value) is _tuple else value
        method = value

        def mro(*args: Any) -> list[Any]:
            return [self.check_value(v, "a class of mro()") for v in method(*args)]

        return mro

    def getitem(self, obj: Any, key: Any, line: int = 0) -> Any:
        return self.check_value(obj[key], "an item")

    def result(self, value: Any, line: int = 0) -> Any:
        """What a call returned (a library's function may return what no read would give: the real
        `type`, a class it built, an object of one)."""
        kind_id = _id(_type(value))
        try:  # check_value's common case, in this call (see getattr)
            if self._kinds[kind_id] == "" and kind_id not in self._substituted_kinds:
                return value
        except KeyError:
            pass
        return self.check_value(value, "a value a call returned")

    def items(self, iterable: Any, shape: Any, line: int = 0) -> Any:
        """The items of a for loop or comprehension, each checked as a call's result is, and the
        values its target unpacks from each (`shape`: 0 for a name, a tuple of shapes for a target
        a, (b, c), 1 for one with a starred name), lazily, as the loop asks."""
        if shape == 0:  # one call per item, not three (see getattr)
            return map(self._loop_item, iterable)
        return map(lambda item: self.unpacked(item, shape), iterable)  # noqa: C417

    def _loop_item(self, value: Any) -> Any:
        """unpacked(value, 0), its common case decided in this call (see getattr)."""
        kind_id = _id(_type(value))
        try:
            if self._kinds[kind_id] == "" and kind_id not in self._substituted_kinds:
                return value
        except KeyError:
            pass
        return self.check_value(value, "a value a loop or an assignment gave")

    def unpacked(self, value: Any, shape: Any, line: int = 0) -> Any:
        """value checked, and as many levels inside it as the target it is assigned to unpacks."""
        if shape == 0:
            return self._loop_item(value)
        values = [*map(self._loop_item, value)]  # (one call per item: see getattr)
        if shape == 1 or len(values) != len(shape):  # a starred target, or one the unpacking will refuse
            return values
        return [self.unpacked(v, inner) for v, inner in zip(values, shape, strict=True)]

    def decorator(self, function: Any, line: int = 0) -> Callable[[Any], Any]:
        """A decorator, whose result is checked as a call's is (applying it is a call no syntax shows)."""
        return lambda decorated: self.check_value(function(decorated), "what a decorator returned")

    def check(self, value: Any, line: int = 0) -> bool:
        """For a name a pattern captured: True, or refused. The name is bound already, to the value
        itself: a value that a read hands out as a checked stand-in instead (functools.wraps,
        update_wrapper, dataclasses.dataclass, type.__new__, a metaclass) is refused, or the
        capture would keep what the stand-in checks (update_wrapper copying any attribute)."""
        if self.check_value(value, "a value a class pattern read") is not value:
            self.refuse(
                f"a pattern capturing {_type_name(value) if _isinstance(value, type) else getattr(value, '__qualname__', 'a library function')}, "
                "which the file may use only through its checked stand-in (read it as an attribute instead)"
            )
        return True

    def subject(self, value: Any, patterns: Any, *read: Any) -> Any:
        """A match statement's subject, once the dotted names its patterns read have been read
        through the checks (the arguments after `patterns`; the last is the line), and once every
        attribute its class patterns read is judged: `patterns` holds, for each class pattern, its
        class, how many positional sub-patterns it has and its keyword names. A pattern reads them on
        whatever object reaches it (an item of a sequence, too), out of the checks' sight, so each
        name is judged by itself: a private or special one, or one the rules refuse on some object,
        is refused here, before anything is matched."""
        for klass, positional, keywords in patterns:
            names = list(keywords)
            if positional and not (_isinstance(klass, type) and klass in SELF_MATCHING):
                match_args = _static_class_attribute(klass, "__match_args__")
                if _type(match_args) is not _tuple or len(match_args) < positional:
                    continue  # the match raises TypeError itself, reading nothing
                names += [match_args[i] for i in range(positional)]
            for name in names:
                if _type(name) is not _str or (name[:1] == "_" and name not in self.readable_dunders) or self._unjudged_name_refused(name):
                    self.refuse(f"a class pattern reading the attribute {name!r} (read it as obj.{name} where the rules can judge the object)")
        return value

    def augmented_attribute(self, obj: Any, name: str, operation: str, value: Any, line: int = 0) -> None:
        """obj.name <op>= value, the read and the write checked."""
        _setattr(self.write(obj, name), name, _getattr(operator, operation)(self.getattr(obj, name), value))

    def augmented_item(self, obj: Any, key: Any, operation: str, value: Any, line: int = 0) -> None:
        """obj[key] <op>= value, the read checked."""
        obj[key] = _getattr(operator, operation)(self.getitem(obj, key), value)

    def write(self, obj: Any, name: str, line: int = 0) -> Any:
        """obj itself, if the file may set or delete its attribute `name`."""
        if _is_dunder(name):
            self.refuse(f"a change to the special attribute {name}")
        if name == "data" and _isinstance(obj, WRITABLE) and not _isinstance(obj, type):
            # x.data = y swaps x's storage: an array made from x (x.numpy(), numpy.asarray(x)) keeps pointing into the old one, freed
            self.refuse("a change to a tensor's .data (it swaps the tensor's memory under any array made from it; update it in place instead)")
        if name == "attrname" and issubclass(_type(obj), functools.cached_property):
            # it writes what its function returns into an instance's own __dict__ under that name: any special name
            self.refuse("a change to a cached_property's attrname (it takes the name it is given in the class statement)")
        if self._owned_somewhere(obj):
            return obj
        if _isinstance(obj, WRITABLE) and not _isinstance(obj, type) and name[:1] != "_":
            return obj  # x.grad = None, x.requires_grad = True, ctx.dim = dim in an autograd Function
        self.refuse(f"a change to {self._path(obj, name)} (an object the file did not make)")

    # -- the built-ins ----------------------------------------------------------------------------

    def builtins(self) -> dict[str, Any]:
        caps = self
        missing = object()
        names = builtins.__dict__

        def getattr(obj: Any, name: str, default: Any = missing, /) -> Any:  # noqa: A001
            if _type(name) is not _str:
                raise TypeError("attribute name must be string")
            if default is missing:
                return caps.getattr(obj, name)
            caps.check_name(obj, name)
            try:
                value = _getattr(obj, name)
            except AttributeError:
                return default
            return caps.checked_attribute(name, value, obj)

        def hasattr(obj: Any, name: str, /) -> bool:  # noqa: A001
            try:
                getattr(obj, name)
            except AttributeError:
                return False
            return True

        def setattr(obj: Any, name: str, value: Any, /) -> None:  # noqa: A001
            if _type(name) is not _str:
                raise TypeError("attribute name must be string")
            _setattr(caps.write(obj, name), name, value)

        def delattr(obj: Any, name: str, /) -> None:  # noqa: A001
            if _type(name) is not _str:
                raise TypeError("attribute name must be string")
            _delattr(caps.write(obj, name), name)

        def vars(*args: Any) -> dict[str, Any]:  # noqa: A001
            if len(args) != 1 or not caps._owned_somewhere(args[0]) or _isinstance(args[0], FunctionType):
                caps.refuse("vars() of anything but an instance or class of the file's own")
            namespace = {k: v for k, v in _dict(_getattr(args[0], "__dict__")).items() if _type(v) is not _ClassOnly}
            if _type(namespace.get("__dataclass_fields__")) is _dict:  # a copy: dataclasses reads fields by the names there
                namespace["__dataclass_fields__"] = _dict(namespace["__dataclass_fields__"])
            return namespace

        def __import__(name: str, globals: Any = None, locals: Any = None, fromlist: Iterable[str] = (), level: int = 0) -> ModuleType:  # noqa: A001, A002
            # Names of exactly str (a statement passes nothing else): a str subclass's own __hash__ and
            # __eq__ would answer the lookups below, and the cache of verdicts on names, for another text.
            from_c = _type(fromlist) is list and not fromlist  # (a statement `import m` passes None, `from m import a` a tuple)
            fromlist = () if fromlist is None else _tuple(fromlist)
            if _type(name) is not _str or _type(level) is not int or any(_type(item) is not _str for item in fromlist):
                caps.refuse("__import__ with a name that is not a str itself (a subclass's own methods would answer the checks)")
            if not level and from_c and name in sys.modules:
                # numpy's and torch's C code importing a module it reads itself (PyImport_Import),
                # which ignores what this returns and looks the module up in sys.modules: it is
                # given nothing (a statement `import m` passes None, `from m import a` a tuple).
                return None  # type: ignore[return-value]
            if level or name not in caps.module_paths:
                caps.refuse(f"the import of {name}")
            module = importlib.import_module(name)
            if not fromlist:
                return importlib.import_module(name.partition(".")[0])
            # `from m import a` reads m.a where no call can be put: it reads from a module holding
            # only the checked values instead.
            chosen = ModuleType(name)
            for item in fromlist:
                if item == "*":
                    caps.refuse(f"the import of * from {name}")
                _setattr(chosen, item, caps.getattr(module, item))
            return chosen

        def __build_class__(func: Any, name: str, *bases: Any, **kwargs: Any) -> Any:
            return caps.own_class(names["__build_class__"](func, name, *bases, **kwargs))

        def refused(name: str) -> Callable[..., NoReturn]:
            def builtin(*args: Any, **kwargs: Any) -> NoReturn:
                caps.refuse(f"the built-in {name}")

            builtin.__name__ = name
            return builtin

        restricted = {name: value for name, value in names.items() if not name.startswith("__") or name in ("__name__", "__doc__", "__debug__")}
        restricted |= {name: refused(name) for name in REFUSED_BUILTINS}
        restricted |= {"getattr": getattr, "hasattr": hasattr, "setattr": setattr, "delattr": delattr, "vars": vars}
        restricted |= {"__import__": __import__, "__build_class__": __build_class__, "type": self.guarded_type}
        return restricted

    def _guarded_type(self) -> type:
        """A stand-in for `type`: type(x) and isinstance(c, type) as usual; type(name, bases,
        namespace) and metaclasses derived from it have their namespace checked."""
        caps = self

        class _Meta(type):
            def __instancecheck__(cls, obj: Any) -> bool:
                return _isinstance(obj, type)

            def __subclasscheck__(cls, sub: Any) -> bool:
                return issubclass(sub, type)

        class GuardedType(type, metaclass=_Meta):
            def __new__(mcs, *args: Any, **kwargs: Any) -> Any:  # noqa: N804
                if len(args) == 1 and not kwargs:
                    kind = _type(args[0])
                    return caps.checked_metaclass(kind) if issubclass(kind, type) else kind
                if len(args) == 3:
                    args = (args[0], args[1], caps._file_namespace(args[0], args[2]))
                if mcs is GuardedType:  # type(name, bases, namespace): the real type picks the metaclass
                    return caps.own_class(_type(*args, **kwargs))
                return caps.own_class(_type.__new__(mcs, *args, **kwargs))  # a metaclass of the file's, derived from type

            def __class_getitem__(cls, item: Any) -> Any:
                return GenericAlias(GuardedType, item)  # calling it calls this type, never the real one

        GuardedType.__name__ = GuardedType.__qualname__ = "type"
        return GuardedType

    def namespace(self, module_name: str) -> dict[str, Any]:
        """The globals the rewritten module runs in."""
        self.module_name = module_name
        return {
            "__name__": module_name,
            "__builtins__": self.builtins(),
            "__file__": self.filename,
            GETATTR: self.getattr,
            GETITEM: self.getitem,
            WRITE: self.write,
            OWN_CLASS: self.own_class,
            CHECK: self.check,
            SUBJECT: self.subject,
            RESULT: self.result,
            ITEMS: self.items,
            UNPACKED: self.unpacked,
            DECORATOR: self.decorator,
            BOUND: self.check_value,  # a value someone else bound: a parameter, `with`/`except ... as`, `yield`, `await`
            AUGMENTED_ATTRIBUTE: self.augmented_attribute,
            AUGMENTED_ITEM: self.augmented_item,
        }


# -- the rewrite ----------------------------------------------------------------------------------------

AUGMENTED = {
    ast.Add: "iadd", ast.Sub: "isub", ast.Mult: "imul", ast.MatMult: "imatmul", ast.Div: "itruediv", ast.FloorDiv: "ifloordiv",
    ast.Mod: "imod", ast.Pow: "ipow", ast.LShift: "ilshift", ast.RShift: "irshift", ast.BitOr: "ior", ast.BitXor: "ixor", ast.BitAnd: "iand",
}  # fmt: skip


PATTERN_NAMES = {(ast.MatchClass, "cls"), (ast.MatchValue, "value"), (ast.MatchMapping, "keys")}
ANNOTATIONS = {(ast.arg, "annotation"), (ast.FunctionDef, "returns"), (ast.AsyncFunctionDef, "returns"), (ast.AnnAssign, "annotation")}


class RefusedSyntax(Exception):
    """The text uses a name or construct that only the grader may use, or one whose reads cannot be
    checked (a class pattern inside a class pattern, a private name in a class pattern)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


_PLAIN_VALUES = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset)
_NAMED: dict[tuple, dict[int, tuple[int, str]]] = {}  # _objects_named's answers, by its arguments
_REACHABLE: dict[tuple, frozenset[int]] = {}  # _reachable's, from the same walk


def _objects_named(modules: dict[int, ModuleType], patterns: list[str]) -> dict[int, tuple[int, str]]:
    """id -> (id of its class, dotted path) of every object that only paths a pattern of
    forbidden_attributes names lead to, among the public attributes of the allowed modules and the
    own dictionaries of their public classes: an object that an allowed path also leads to (the
    module torch, as torch.autograd.torch), an allowed module, and plain values (an int or a str is
    no capability, and is shared) are left out. Found once per process and kept: the pool's server
    finds them before it forks."""
    key = (tuple(sorted(modules)), tuple(patterns))
    if key not in _NAMED:
        matches = re.compile("|".join(fnmatch.translate(p) for p in patterns) or "(?!)").match
        found: dict[int, tuple[int, str]] = {}
        allowed: set[int] = set(modules)

        def consider(path: str, value: Any) -> None:
            if _isinstance(value, _PLAIN_VALUES):
                return
            if not matches(path):
                allowed.add(_id(value))
            elif _id(value) not in found:
                found[_id(value)] = (_id(_type(value)), path)

        for module in modules.values():
            for name, value in list(vars(module).items()):
                if name.startswith("_"):
                    continue
                path = f"{module.__name__}.{name}"
                consider(path, value)
                if _isinstance(value, type):
                    for member, inner in list(_dict_of(value).items()):
                        if not member.startswith("_"):
                            consider(f"{path}.{member}", inner)
        _NAMED[key] = {ident: named for ident, named in found.items() if ident not in allowed}
        _REACHABLE[key] = frozenset(allowed)
    return _NAMED[key]


def _reachable(modules: dict[int, ModuleType], patterns: list[str]) -> frozenset[int]:
    """ids of the objects that allowed paths lead to, of those _objects_named walks (torch.exp,
    numpy.array, functools.reduce), found in the same walk."""
    _objects_named(modules, patterns)
    return _REACHABLE[(tuple(sorted(modules)), tuple(patterns))]


def _field_name(field: Any) -> Any:
    """A dataclasses.Field's name, read from the slot itself."""
    return dataclasses.Field.__dict__["name"].__get__(field) if _type(field) is dataclasses.Field else None


# Built-in types whose class pattern with one positional sub-pattern matches the subject itself,
# reading no attribute (PEP 634).
SELF_MATCHING = frozenset({bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple})


def _static_class_attribute(klass: Any, name: str) -> Any:
    """klass.name as the class's own dictionaries along its MRO hold it, without running any code
    (no descriptor, no metaclass __getattr__)."""
    if not _isinstance(klass, type):
        return None
    for base in _mro_of(klass):
        namespace = _dict_of(base)
        if name in namespace:
            return namespace[name]
    return None


def _call(name: str, node: ast.AST, *args: ast.expr) -> ast.Call:
    line = ast.Constant(getattr(node, "lineno", 0))
    return ast.copy_location(ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[*args, line], keywords=[]), node)


def _refuse_nested_class_patterns(patterns: Iterable[ast.AST]) -> None:
    for pattern in patterns:
        for node in ast.walk(pattern):
            if isinstance(node, ast.MatchClass):
                raise RefusedSyntax(node.lineno, "a class pattern inside a class pattern (its attribute reads cannot be checked)")


def _captured_names(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    return []


def _dotted_names(pattern: ast.AST) -> list[ast.expr]:
    """The dotted names a pattern reads where the compiler accepts nothing else: class patterns'
    classes, value patterns (case torch.float32:) and mapping keys. Each is refused if it names a
    private or special attribute."""
    found: list[ast.expr] = []
    for node in ast.walk(pattern):
        if isinstance(node, ast.MatchClass):
            found.append(node.cls)
        elif isinstance(node, ast.MatchValue):
            found.append(node.value)
        elif isinstance(node, ast.MatchMapping):
            found += node.keys
    for name in found:
        for part in ast.walk(name):
            if isinstance(part, ast.Attribute) and part.attr.startswith("_"):
                raise RefusedSyntax(part.lineno, f"a pattern naming the private or special attribute {part.attr}")
    return [name for name in found if isinstance(name, ast.Attribute)]


def _rewrite_match(match: ast.Match) -> None:
    """A pattern's dotted names are read where no call can be put, and a value pattern hands what it
    reads to the subject's __eq__: each is read once through the checks, with the subject, before
    the match compares anything (`match __mlm_subject__(subject, torch.float32, ...)`)."""
    dotted = [copy.deepcopy(name) for case in match.cases for name in _dotted_names(case.pattern)]
    classes = [node for case in match.cases for node in ast.walk(case.pattern) if isinstance(node, ast.MatchClass)]
    if dotted or classes:
        patterns = ast.Tuple(
            elts=[
                ast.Tuple(elts=[copy.deepcopy(node.cls), ast.Constant(len(node.patterns)), ast.Constant(tuple(node.kwd_attrs))], ctx=ast.Load())
                for node in classes
            ],
            ctx=ast.Load(),
        )
        match.subject = _call(SUBJECT, match.subject, match.subject, patterns, *dotted)


def _shape(target: ast.expr) -> Any:
    """How deep an assignment target unpacks: 0 for a name (or attribute, subscript), a tuple of
    the shapes of its parts for a, (b, c), 1 for a target with a starred part."""
    if not isinstance(target, (ast.Tuple, ast.List)):
        return 0
    if any(isinstance(e, ast.Starred) for e in target.elts):
        return 1
    return tuple(_shape(e) for e in target.elts)


def _rewrite_case(case: ast.match_case) -> None:
    """A pattern reads attributes and items where no call can be put: every name it captures is
    checked before the case's own guard and body (a refusal ends the run, whatever the file catches)."""
    for node in ast.walk(case.pattern):
        if isinstance(node, ast.MatchClass):
            for attribute in node.kwd_attrs:
                if attribute.startswith("_"):
                    raise RefusedSyntax(node.lineno, f"a class pattern reading the private or special attribute {attribute}")
            _refuse_nested_class_patterns([*node.patterns, *node.kwd_patterns])
    captured = [name for node in ast.walk(case.pattern) for name in _captured_names(node)]
    if captured:
        checks = [_call(CHECK, case.pattern, ast.Name(id=name, ctx=ast.Load())) for name in captured]
        values = [*checks, *([case.guard] if case.guard else [])]
        case.guard = ast.copy_location(ast.BoolOp(op=ast.And(), values=values), case.pattern) if len(values) > 1 else values[0]


def _parameters(arguments: ast.arguments) -> list[str]:
    every = [*arguments.posonlyargs, *arguments.args, arguments.vararg, *arguments.kwonlyargs, arguments.kwarg]
    return [a.arg for a in every if a is not None]


def _stored_names(target: ast.AST | None) -> list[str]:
    """The plain names a `with ... as` or `async for` target binds (an attribute or item is checked when read)."""
    if target is None:
        return []
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def _checked_binding(name: str, what: str, node: ast.AST) -> ast.Call:
    """`__mlm_bound__(name, what, line)`: the value someone else bound to `name`, checked."""
    return _call(BOUND, node, ast.Name(id=name, ctx=ast.Load()), ast.Constant(what.format(name)))


def _checked_bindings(names: list[str], what: str, node: ast.AST) -> list[ast.stmt]:
    """`name = __mlm_bound__(name, what, line)` for each name."""
    return [ast.copy_location(ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())], value=_checked_binding(n, what, node)), node) for n in names]


def _check_bindings(node: ast.AST) -> None:
    """Values bound by someone else than the file's code are checked where they enter: the
    parameters of every function the file writes (library code calls them back with its own
    values: a sort key, a hook, a special method, __exit__ with a traceback), the names of
    `with ... as` and `except ... as`."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        docstring = isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str)
        at = 1 if docstring else 0
        node.body[at:at] = _checked_bindings(_parameters(node.args), f"the argument {{}} of {node.name}()", node)
    elif isinstance(node, ast.Lambda) and _parameters(node.args):
        # no statement fits in a lambda: `lambda x: body` becomes `lambda x: body if (x := check(x),) else None`
        names = _parameters(node.args)
        checks = [ast.NamedExpr(target=ast.Name(id=n, ctx=ast.Store()), value=_checked_binding(n, "the argument {} of a lambda", node)) for n in names]
        node.body = ast.copy_location(ast.IfExp(test=ast.Tuple(elts=checks, ctx=ast.Load()), body=node.body, orelse=ast.Constant(None)), node.body)
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        names = [name for item in node.items for name in _stored_names(item.optional_vars)]
        node.body[0:0] = _checked_bindings(names, "the value `with ... as {}` bound", node)
    elif isinstance(node, ast.AsyncFor):  # its items come from an asynchronous iterator, which the loop's own check cannot wrap
        node.body[0:0] = _checked_bindings(_stored_names(node.target), "the value `async for {}` bound", node)
    elif isinstance(node, ast.comprehension) and node.is_async:
        raise RefusedSyntax(getattr(node.iter, "lineno", 0), "an asynchronous comprehension (its items cannot be checked: write an `async for` loop)")
    elif isinstance(node, ast.ExceptHandler) and node.name:
        node.body[0:0] = _checked_bindings([node.name], "the exception `except ... as {}` bound", node)


def _rewrite_child(node: ast.AST) -> ast.AST:
    """The node that replaces `node` in its parent: reads, writes and classes through Capabilities."""
    if isinstance(node, (ast.Call, ast.Yield, ast.YieldFrom, ast.Await)) and not getattr(node, "checked", False):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.startswith(PREFIX):
            return node  # a call the rewrite put here
        node.checked = True  # type: ignore[attr-defined] - visited again as the argument of its check
        if isinstance(node, ast.Call):
            return _call(RESULT, node, node)
        return _call(BOUND, node, node, ast.Constant("what `await` returned" if isinstance(node, ast.Await) else "a value sent into a generator"))
    _check_bindings(node)
    if isinstance(node, ast.For) or (isinstance(node, ast.comprehension) and not node.is_async):
        node.iter = _call(ITEMS, node.iter, node.iter, ast.Constant(_shape(node.target)))
    elif isinstance(node, ast.Assign) and all(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
        node.value = _call(UNPACKED, node, node.value, ast.Constant(_shape(node.targets[0])))  # a, (b, c) = ...
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        node.decorator_list = [d if isinstance(d, ast.Name) and d.id.startswith(PREFIX) else _call(DECORATOR, d, d) for d in node.decorator_list]
    if isinstance(node, ast.Attribute):
        if isinstance(node.ctx, ast.Load):
            return _call(GETATTR, node, node.value, ast.Constant(node.attr))
        node.value = _call(WRITE, node, node.value, ast.Constant(node.attr))
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        return _call(GETITEM, node, node.value, node.slice)
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, (ast.Attribute, ast.Subscript)):
        # x.a += v reads x.a where no call can be put: one call reads, combines in place and writes.
        target, operation = node.target, ast.Constant(AUGMENTED[type(node.op)])
        if isinstance(target, ast.Attribute):
            call = _call(AUGMENTED_ATTRIBUTE, node, target.value, ast.Constant(target.attr), operation, node.value)
        else:
            call = _call(AUGMENTED_ITEM, node, target.value, target.slice, operation, node.value)
        return ast.copy_location(ast.Expr(call), node)
    elif isinstance(node, ast.ClassDef):
        node.decorator_list.insert(0, ast.copy_location(ast.Name(id=OWN_CLASS, ctx=ast.Load()), node))
    elif isinstance(node, ast.match_case):
        _rewrite_case(node)
    elif isinstance(node, ast.Match):
        _rewrite_match(node)
    return node


def _mangle(tree: ast.AST) -> None:
    """Private names inside a class (self.__x) as the compiler would mangle them (self._Class__x):
    the rewrite turns attribute reads into strings, which the compiler does not mangle."""
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, owner = stack.pop()
        if isinstance(node, ast.Attribute) and owner and node.attr.startswith("__") and not node.attr.endswith("__"):
            node.attr = f"_{owner}{node.attr}"
        inner = node.name.lstrip("_") if isinstance(node, ast.ClassDef) else owner
        for child in ast.iter_child_nodes(node):
            # a class's bases, keywords and decorators are read outside its body
            outside = isinstance(node, ast.ClassDef) and child in (*node.bases, *node.keywords, *node.decorator_list)
            stack.append((child, owner if outside else inner))


def _check_names(tree: ast.AST) -> None:
    """Refuse the names only the grader may use, before the rewrite adds its own."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.arg):
            names = [node.arg]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.alias):
            names = [node.name, node.asname or ""]
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names = list(node.names)
        elif isinstance(node, ast.keyword):
            names = [node.arg or ""]
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            names = [node.name or ""]
        else:
            continue
        for name in names:
            if name.startswith(PREFIX) or name == "__builtins__":
                raise RefusedSyntax(getattr(node, "lineno", 0), f"the name {name} is reserved for the grader")
        if isinstance(node, ast.Name) and node.id == "__name__" and not isinstance(node.ctx, ast.Load):
            raise RefusedSyntax(node.lineno, "assigning __name__ (the module's name is the grader's)")


def transform(tree: ast.Module) -> ast.Module:
    """Rewrite the tree in place so that reads, writes and classes go through Capabilities. Walks
    with an explicit stack: a long generated expression cannot exhaust Python's recursion limit."""
    _check_names(tree)
    _mangle(tree)
    # Under `from __future__ import annotations` annotations are never run, only kept as text, which
    # dataclasses reads (ClassVar, InitVar): they stay as written.
    future = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations" for a in n.names) for n in tree.body)
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        for field, value in ast.iter_fields(node):
            if (node.__class__, field) in PATTERN_NAMES:
                continue  # a dotted name, read through the checks by _rewrite_match: the compiler accepts nothing else there
            if future and (node.__class__, field) in ANNOTATIONS:
                continue
            if isinstance(value, list):
                for index, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        value[index] = replaced = _rewrite_child(item)
                        stack.append(replaced)
            elif isinstance(value, ast.AST):
                replaced = _rewrite_child(value)
                setattr(node, field, replaced)
                stack.append(replaced)
    return ast.fix_missing_locations(tree)


def compile_submission(text: str, filename: str) -> CodeType:
    """The code object of the rewritten submission (SyntaxError or RefusedSyntax if it cannot be)."""
    return compile(transform(ast.parse(text, filename=filename)), filename, "exec", dont_inherit=True)
