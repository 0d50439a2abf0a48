"""The run-time checks: what the submission's code can reach is decided on the objects themselves.

The rewritten code (rewrite.py) calls these checks on every attribute read and write, subscript,
class statement, call result, loop item, unpacked value, pattern capture and value bound by someone
else. What a read may hand out is what the rules allow (grader/rules.toml, as allowed.py resolves
them to objects):

- on an allowed module, the objects its lists name (torch.exp), the allowed submodules, and data
  (numbers, strings, dtypes: no capability);
- on an object or class of torch's or numpy's, the entries of its classes' dictionaries the lists
  name (the descriptor of torch.Tensor.view, of torch.Tensor.shape), and the fields of its result
  tuples (torch.return_types);
- on Python's own types and the other allowed modules' objects, their public names;
- on the file's own objects, functions and classes, whatever the file defined.

Nothing else: a private name of another's object, a special name off the `read` list, a module
outside the lists, Python's machinery (frames, code, tracebacks, cells), torch's dispatcher
internals, an object of a library class that no list names. Writes to objects the file did not make
are refused but for the `writable` list. A refusal ends the run where it happens. What this layer
assumes (no memory-corruption bug in CPython, torch or numpy reachable from the allowed API):
docs/threat-model.md.
"""

import builtins
import collections
import enum
import functools
import inspect
import operator
import sys
import typing
from collections.abc import Callable, Iterable
from fnmatch import fnmatchcase
from types import (
    BuiltinFunctionType,
    CellType,
    CodeType,
    FrameType,
    FunctionType,
    GetSetDescriptorType,
    MemberDescriptorType,
    MethodType,
    MethodWrapperType,
    ModuleType,
    TracebackType,
)
from typing import Any, NoReturn

import numpy
import torch

from . import rewrite
from .allowed import DATA, Allowed, class_entry, library_class, resolve
from .arrays import check_buffers
from .arrays import has_object as _has_object
from .builtins import guarded_type, restricted_builtins
from .callers import Callers, probe
from .classes import (
    _ABSENT,
    ALL_NAMES_CALLED,
    CLASS_ONLY,
    ENUM_HOOKS,
    GETTERS,
    METACLASS_MADE,
    TOTAL_ORDERING,
    defines_raw_memory,
    foreign_base,
    getter_of_the_file,
    inert,
    is_sunder,
)
from .relays import ClassWrites, HeldRelay, describe, held, is_relay, make_relay, relay_target, unrelayed
from .slots import (
    HEAP_TYPE,
    _dict,
    _dict_of,
    _flags_of,
    _getattr,
    _hasattr,
    _id,
    _isinstance,
    _module_of,
    _mro_of,
    _str,
    _super_self_class,
    _super_this,
    _tuple,
    _type,
    _type_name,
    is_dunder,
)
from .standins import copying_numpy, stand_ins

# Names the documented APIs of namedtuple and enum start with an underscore.
PUBLIC_PRIVATE_NAMES = frozenset({"_make", "_asdict", "_fields", "_replace", "_field_defaults", "_value_", "_name_", "_missing_"})
BOUND_METHODS = (MethodType, BuiltinFunctionType, MethodWrapperType)  # made anew at each read: judged by what they are bound to
CLASS_LISTS = frozenset({"__mro__", "__bases__", "mro"})  # attributes whose values are classes in a list
RELAYS = ("__getattr__", "__getattribute__", "__setattr__", "__delattr__")  # in Python, they can pass names on
MACHINERY = (FrameType, TracebackType, CodeType, CellType)
# What Python, typing and abc put in the namespace of any class they build, as data.
CLASS_BOOKKEEPING = frozenset(
    {
        "__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__annotations__", "__slots__", "__classcell__",
        "__orig_bases__", "__parameters__", "__abstractmethods__", "__firstlineno__", "__static_attributes__", "__type_params__",
        "__match_args__", "__protocol_attrs__", "__non_callable_proto_members__",
    }
)  # fmt: skip
# Special methods the library code that builds a class puts there itself (enum's __new__, typing's
# __subclasshook__ for a Protocol, namedtuple's __getnewargs__, a frozen dataclass's __setattr__ and
# __getstate__): accepted when the value is a function of the library's (compiled from no text of
# the file's), never when the file defines them.
LIBRARY_MADE = frozenset(
    {
        "__new__", "__init__", "__repr__", "__subclasshook__", "__init_subclass__", "__getnewargs__",
        "__setattr__", "__delattr__", "__getstate__", "__setstate__", "__reduce_ex__",
    }
)  # fmt: skip
# Objects of torch's and numpy's own classes that may be in the file's hands (made by the calls the
# lists allow), and nothing else of theirs: a storage, a graph node, a generator, a flat iterator,
# an operator packet are refused as values.
# torch.vmap over an autograd Function with generate_vmap_rule = True hands its setup_context and
# backward a wrapper of the real context, which passes reads and writes on to it: each is judged as
# on the context it wraps (Capabilities._context_behind).
WRAPPED_CONTEXT = torch._functorch.autograd_function.WrappedCtx
_INNER_CONTEXT = "_pt_inner_ctx"
VALUE_CLASSES = (
    torch.Tensor, torch.Size, torch.dtype, torch.device, torch.layout, torch.memory_format, torch.finfo, torch.iinfo,
    numpy.ndarray, numpy.generic, numpy.dtype, numpy.finfo, numpy.iinfo, numpy.random.Generator, numpy.ufunc, WRAPPED_CONTEXT,
)  # fmt: skip
VALUE_MODULES = ("torch.return_types", "numpy.linalg._linalg", "torch.autograd.function")  # their classes' instances too (results, contexts)
TORCH_SIZE = torch.Size  # a tuple of ints, by construction
# Containers whose items library code can take out unseen; each is read with its built-in type's own iterator.
_VIEWS = (type({}.keys()), type({}.values()), type({}.items()))
CONTAINERS = (list, tuple, dict, set, frozenset, *_VIEWS)
# Built-in types whose class pattern with one positional sub-pattern matches the subject itself,
# reading no attribute (PEP 634).
SELF_MATCHING = frozenset({bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple})
RULES = "see the Rules in the statement, or `python -m grader rules`"
OWN_METHODS = "define it with def in the class body, or as a property of your own functions"
PLAIN_CLASSES = (
    "derive from object, a built-in type (list, dict, tuple, int, ...), an Enum, an ABC of abc or collections.abc, "
    "typing.Generic or Protocol, a NamedTuple, torch.autograd.Function or torch.Tensor"
)
# Names in the rules' `define` list that hold data, not a method.
DEFINED_DATA = frozenset({"__name__", "__main__", "__doc__", "__all__", "__future__", "__slots__"})
OFF_THE_LISTS = "not on this challenge's allow-list"
WRAPPERS_DEEP = 4  # how many functools.wraps wrappers around a listed function are looked through
_dict_get = dict.get  # a function's dictionary, read with dict's own method
_POINT = collections.namedtuple("_POINT", "x")
_PROTO_HOOK = next(c for c in typing.Protocol.__init_subclass__.__func__.__code__.co_consts if getattr(c, "co_name", "") == "_proto_hook")
LIBRARY_MADE_CODE = frozenset({_POINT.__repr__.__code__, _POINT.__getnewargs__.__code__, typing._no_init_or_replace_init.__code__, _PROTO_HOOK})  # type: ignore[attr-defined]
_PLAIN_C_DESCRIPTORS = (type(_POINT.x), MemberDescriptorType, GetSetDescriptorType)
# A callable object that is also a context manager (torch.no_grad()) or subscripted (typing.Optional)
# stays itself: `with` and `[...]` need it, and its call hands back a wrapper or raises.
MORE_THAN_CALLABLE = frozenset({"__enter__", "__getitem__"})
_LRU_CACHE = type(functools.cache(len))  # functools' C wrapper; its __wrapped__ is set once, by functools itself
CACHEABLE = frozenset({"__call__", "__hash__"})  # special methods a cache may stand for: no walk of numpy's or torch's calls them
_GRAD_MODES = (torch.no_grad, torch.enable_grad, torch.inference_mode, torch.set_grad_enabled)
_GRAD_MODE_WRAPPER = torch.no_grad()(lambda: None).__code__  # torch.utils._contextlib's decorate_context
_fget, _fset, _fdel = property.fget.__get__, property.fset.__get__, property.fdel.__get__  # property's own slots
# An array's base and dtype, and whether a dtype holds Python objects, read with numpy's own
# descriptors (C getters), whatever an ndarray subclass defines under those names.
_array_base = functools.partial(vars(numpy.ndarray)["base"].__get__)
_array_dtype = functools.partial(vars(numpy.ndarray)["dtype"].__get__)
_getframe = sys._getframe
_CO_OPTIMIZED = inspect.CO_OPTIMIZED  # a function's code (not a module's or a class body's)
_CO_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
_COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})
_CALLERS: list[Callers] = []  # made and tried once per process (a pool's children inherit the server's)


def _process_callers() -> Callers:
    if not _CALLERS:
        callers = Callers()
        probe(callers)
        _CALLERS.append(callers)
    return _CALLERS[0]


def _library_name(path: str) -> str:
    """numpy, torch or the shared object's name, for a message."""
    for library in ("numpy", "torch"):
        if f"/{library}/" in path:
            return library
    return path.rsplit("/", 1)[-1]


CALLED_BACK = (
    "which it calls while it holds memory your code could free (the items of a list it walks): hand numpy and torch "
    "numbers, lists of numbers and tensors, not objects of your classes"
)
OBJECT_ARRAYS = "with which numpy's own code can be made to read and write raw memory: keep Python objects in a list, and numbers in arrays"
_UNWRAPPED = object()  # what a function without __wrapped__ has there: nothing a list names


def _contents_of(container: Any) -> Iterable[Any]:
    """The items of a container (a dict's keys and values), read in C: no method of a subclass runs."""
    kind = type(container)
    for base in CONTAINERS:
        if issubclass(kind, base):
            return [*dict.__iter__(container), *dict.values(container)] if base is dict else base.__iter__(container)
    return ()


def _torch_internal(value: Any) -> bool:
    """torch's TorchScript and dispatcher classes (pybind11 types and their instances) and its
    operator objects: not tensor API, and ways to reach operators or compilers."""
    kind = _type(value)
    meta = value if _isinstance(value, type) else kind
    module = _module_of(kind)
    return _type_name(_type(meta)) == "pybind11_type" or (_isinstance(module, _str) and module.startswith("torch._ops"))


def _static_class_attribute(klass: Any, name: str) -> Any:
    """klass.name as the class's own dictionaries along its MRO hold it, without running any code."""
    if not _isinstance(klass, type):
        return None
    entry = class_entry(klass, name)
    return entry[1] if entry else None


def _result_field(holder: type, entry: Any) -> bool:
    """Whether a class-dictionary entry is a field of one of torch's or numpy's result tuples
    (torch.return_types.max's values, numpy's EighResult's eigenvalues): data."""
    return issubclass(holder, _tuple) and (_type(entry) is MemberDescriptorType or _type_name(_type(entry)) == "_tuplegetter")


class Capabilities:
    """The checks behind the rewritten code and the restricted built-ins, for one submission."""

    def __init__(self, config: dict[str, Any], refuse: Callable[[str], NoReturn]) -> None:
        """config: "submission" (the file's name) and "rules" (grader/rules.py Rules.child_config).
        refuse(what) records a finding and does not return (the child's ends the run)."""
        self._refuse = refuse
        rules = config["rules"]
        self.filename: str = config["submission"]
        self.allowed: Allowed = resolve(rules)
        self.advice: list[list[str]] = [list(pair) for pair in rules["advice"]]
        self.module_paths = frozenset(rules["modules"]) | frozenset(rules["submodules"])
        self.modules = self.allowed.modules
        self.module_names = self.allowed.module_names
        self.readable_dunders = frozenset(rules["read"])
        self.definable = frozenset(rules["define"]) | CLASS_BOOKKEEPING
        self._verdicts: dict[tuple[int, str], str] = {}  # (id of a module or class, name) -> why a read is refused ("" if it is not)
        self._unjudged = _unlisted_member_names(self.allowed)
        self.own_ids: set[int] = set()
        self._own: list[type] = []  # keeps the classes alive, so that their ids stay theirs
        self._generated: dict[int, frozenset[str]] = {}  # id of a class dataclasses made -> the special names it put there
        self.making_dataclass: list[Any] = []  # the classes dataclasses.dataclass is making now (the stand-in says)
        self._kinds: dict[int, str] = {}  # id of a class -> why its instances are refused ("" if they are not)
        self._kept_kinds: list[type] = []
        self._raw_classes: dict[int, bool] = {}  # id of a class -> whether it hands out raw memory
        self._checked: dict[int, type] = {}  # id of a metaclass -> its checked stand-in
        self._checked_ids: set[int] = set()
        self._namespaces: dict[int, Any] = {}  # id of a module's globals -> the globals (kept: no other object takes its id)
        self._namespaces_seen = -1
        self.module_name = ""  # the submission's module, once namespace() is made
        self._type_paths = self._public_type_paths()
        self._substitutes: dict[int, Any] = {}  # id of a library function -> the checked version handed out instead
        self._substituted_kinds: set[int] = {_id(kind) for kind in BOUND_METHODS}  # judged as the read of their name (_by_identity)
        self._unlisted = self.allowed.unlisted  # id of a public object of the allowed modules no list names -> its path
        self._substituted_kinds |= self.allowed.unlisted_kinds  # their classes' values are judged by identity
        self._not_plain: set[int] = set(self._substituted_kinds)  # those, and the kinds of callables handed out as relays
        for original, replacement in stand_ins(self):
            self._substitute(original, replacement)
        self.guarded_type = guarded_type(self)
        restricted = restricted_builtins(self, rules["builtins"])
        for name, value in restricted.items():
            if name != "__name__":
                self._substitute(getattr(builtins, name), value)
        self._builtins = restricted
        check_buffers(self._judge_buffer)
        self._callers = _process_callers()
        self._trusted: dict[int, CodeType] = {}  # the file's code objects whose entries are all checked (trust)
        self._calls: dict[int, bool] = {}  # id of a class -> whether its objects are callables handed out as relays
        self._relays: dict[int, tuple[Any, Any]] = {}  # id of a callable that stays (a module's function) -> (it, its relay)
        self._calls[_id(HeldRelay)] = False

    def refuse(self, what: str, name: str = "") -> NoReturn:
        """Refuse `what`, with the rules' advice for `name` (a qualified name) where they have one."""
        told = next((advice for pattern, advice in self.advice if name and fnmatchcase(name, pattern)), "")
        self._refuse(f"{what} ({told})" if told else what)

    def _substitute(self, original: Any, replacement: Any) -> None:
        self._substitutes[_id(original)] = replacement
        self._substituted_kinds.add(_id(_type(original)))
        self._not_plain.add(_id(_type(original)))

    def generated_by_dataclasses(self, klass: type, names: set[str]) -> None:
        """The special names dataclasses put in a class it made (dataclasses.dataclass's stand-in says)."""
        self._generated[_id(klass)] = frozenset(names)

    def unjudged_name_refused(self, name: str, klass: Any = None) -> bool:
        """Whether a name read where no check can judge the object is refused (a dataclass's own
        code, a class pattern). On an object of `klass` (the dataclass, the pattern's class): when a
        library class of its MRO holds an entry of that name that no list allows. On any object
        (klass None, or object): when it names such an entry of some class whose objects the file
        may hold (data, on a tensor), or a value a read hands out checked item by item (mro()
        lists the real `type`)."""
        if name in CLASS_LISTS:
            return True
        if _isinstance(klass, type) and klass is not object:
            found = class_entry(klass, name)
            if found is not None:
                holder, entry = found
                return library_class(holder) and _id(entry) not in self.allowed.members and not _result_field(holder, entry)
            if not any(library_class(k) for k in _mro_of(klass)):
                return False  # the file's own class: an instance attribute of its own
        return name in self._unjudged

    # -- what the file owns ---------------------------------------------------------------------

    def _public_type_paths(self) -> dict[int, str]:
        """id of each public class of the allowed modules -> its dotted path (torch.UntypedStorage)."""
        paths: dict[int, str] = {}
        for module in self.modules.values():
            for name, value in vars(module).items():
                if not name.startswith("_") and _isinstance(value, type):
                    paths.setdefault(_id(value), f"{self.module_names[_id(module)]}.{name}")
        return paths

    def own_class(self, cls: Any) -> Any:
        """Mark a class as the file's own (its private names are its business), after checking
        that its namespace defines only the special methods the rules allow, and that no class it
        derives from passes unknown attribute reads or writes on to another object (typing's
        aliases do: a private name of the file's own would reach the alias's origin)."""
        if _isinstance(cls, type) and _id(cls) not in self.own_ids:
            for key, value in [*_dict_of(cls).items()]:
                if is_relay(value):  # the very entry a class it derives from holds (__hash__ = object.__hash__): that entry
                    entry = next((_dict_of(k)[key] for k in _mro_of(cls)[1:] if _same_entry(_dict_of(k).get(key, _ABSENT), relay_target(value))), None)
                    if entry is not None:
                        _type.__setattr__(cls, key, entry)
            self._check_namespace(_type_name(cls), _dict_of(cls), self._generated.get(_id(cls), frozenset()), _mro_of(cls)[1:])
            if super in _mro_of(cls):
                self.refuse(f"a class ({_type_name(cls)}) derived from super (its lookups are another class's)")
            foreign = foreign_base(cls, lambda klass: klass is self.guarded_type or self._is_own_class(klass))
            if foreign is not None:
                self.refuse(
                    f"a class ({_type_name(cls)}) derived from {_module_of(foreign)}.{_type_name(foreign)}, whose code runs what your objects "
                    f"hold where no check of yours does: {PLAIN_CLASSES}"
                )
            self._check_entries(cls)
            for klass in _mro_of(cls)[1:]:
                if not self._is_own_class(klass):
                    relays = [n for n in RELAYS if _type(_dict_of(klass).get(n)) is FunctionType]
                    if relays:
                        self.refuse(f"a class ({_type_name(cls)}) derived from {_type_name(klass)}, whose {relays[0]} passes attributes on to another object")
            if not issubclass(cls, type):  # (a class's own namespace is checked: no metaclass needs them)
                for name, guard in CLASS_ONLY.items():
                    _type.__setattr__(cls, name, guard)  # type's own: no __setattr__ of a metaclass runs
            self.own_ids.add(_id(cls))
            self._own.append(cls)
        return cls

    def _check_entries(self, cls: type) -> None:
        """What a class of the file's holds where code other than the file's reads it: under a special
        method's name, a function of the file's (Python, numpy and torch call it), never a callable
        of someone else's (functools.partial(list.clear, items) would run inside numpy's walk of a
        list with no code of the file's to check); a property or cached_property, whatever its name,
        over functions of the file's; under a name a library class it derives from defines (which
        that library's Python code reads on the object: torch.Tensor.__len__ reads self.shape), a
        function of the file's or plain data. What the library that built the class put there
        itself is let through: dataclasses' methods, functools.total_ordering's comparisons, enum's
        and abc's bookkeeping."""
        name = _type_name(cls)
        namespace = _dict_of(cls)
        library = [k for k in _mro_of(cls)[1:] if not self._is_own_class(k)]
        defined = set().union(*(_dict_of(k).keys() for k in library if k is not object))  # (int's bit_count too: library code calls it on values)
        generated = self._generated.get(_id(cls), frozenset())
        enum_class = issubclass(cls, enum.Enum)
        for key, value in [*namespace.items()]:  # a mappingproxy's own items (its class is C's)
            value = unrelayed(value)  # (judged as what it stands for)
            if key in CLASS_BOOKKEEPING or key in METACLASS_MADE or value is CLASS_ONLY.get(key) or (enum_class and is_sunder(key) and key not in ENUM_HOOKS):
                continue  # data, or what the library's own metaclass set (enum's _EnumDict refuses other _sunder_ names)
            inner = value
            while _type(inner) is classmethod or _type(inner) is functools.partialmethod:  # each passes a read on to what it holds
                inner = inner.__func__ if _type(inner) is classmethod else _dict_get(vars(inner), "func", None)
            if _isinstance(inner, GETTERS) and not self._getter_of_the_file(inner):
                self.refuse(f"a class ({name}) whose {key} is a {_type_name(_type(value))} over a function that is not your file's ({OWN_METHODS})")
            special = is_dunder(key) and key not in DEFINED_DATA
            if not (special or key in defined or (enum_class and key in ENUM_HOOKS)):
                continue
            if self._method_of_the_file(value) or any(_same_entry(_dict_of(k).get(key, _ABSENT), value) for k in library):
                continue  # (enum puts Enum.__new__'s function in each Enum it makes)
            if key in CACHEABLE and _type(value) is _LRU_CACHE and self._is_own_function(_dict_get(vars(value), "__wrapped__", None)):
                continue  # @functools.cache on __call__ or __hash__, which no conversion of numpy's or torch's calls
            if key in generated or _library_made(value):
                continue  # put there by dataclasses (what it added to the class), namedtuple or typing
            if any(_dict_of(made).get(key, _ABSENT) is value for made in self.making_dataclass):
                continue  # dataclasses' new class for slots=True, made of the namespace of the class it is making
            if _id(value) in TOTAL_ORDERING or (not special and (inert(value) or (enum_class and _type(value) is cls))):
                continue  # functools.total_ordering's comparison, plain data, an enum's member
            if special and key not in CACHEABLE and (_type(value) is _LRU_CACHE or _type(value) is functools.cached_property):
                self.refuse(
                    f"a class ({name}) whose {key} is a cache ({_type_name(_type(value))}): numpy and torch would get what your code "
                    f"returned before, with none of it running; define {key} with def and cache inside it (only __call__ and "
                    "__hash__ may be cached)",
                    key,
                )
            if not special and _type(value) in _PLAIN_C_DESCRIPTORS:
                continue  # a NamedTuple's field, a slot: C code that reads the object's own storage
            if _type(value) is FunctionType:  # named by where its code is (a wrapper copies the name of what it wraps)
                what = f"a function of {_library_name(value.__code__.co_filename)}'s ({value.__code__.co_name}, wrapping or made by library code)"
            else:
                what = f"a {_type_name(_type(value))}"
            where = "a special method" if special else f"a name {_type_name(next(k for k in library if key in _dict_of(k)))} defines"
            self.refuse(f"a class ({name}) whose {key} ({where}) is {what}, not a function of your file's ({OWN_METHODS})", key)

    def _getter_of_the_file(self, value: Any) -> bool:
        """A property or cached_property whose functions are the file's (a property's getter may be a
        cache of one: what it returns is data, as an attribute the file set would be)."""
        if _type(value) is functools.cached_property:
            return self._is_own_function(_dict_get(vars(value), "func", None))
        if _type(value) is property and _type(_fget(value)) is _LRU_CACHE:
            cached = _dict_get(vars(_fget(value)), "__wrapped__", None)
            return self._is_own_function(cached) and _fset(value) is None and _fdel(value) is None
        return self._method_of_the_file(value)

    def _method_of_the_file(self, value: Any) -> bool:
        """None, a function of the file's, or a staticmethod, classmethod, property, partialmethod or
        torch's grad-mode decorator over such functions: each runs the function at every call, where
        callers.py checks who called. Not a cache (functools.cached_property, functools.cache): it
        hands back what the function returned before, with no code of the file's to check."""
        kind = _type(value)
        if value is None or self._is_own_function(value):
            return True
        if kind is staticmethod or kind is classmethod:
            return self._method_of_the_file(value.__func__)
        if issubclass(kind, property):
            functions = (_fget(value), _fset(value), _fdel(value))
            return all(f is None or self._is_own_function(f) for f in functions)
        if kind is functools.partialmethod:  # (no class of the file's derives from it: foreign_base)
            return self._is_own_function(_dict_get(vars(value), "func", None))
        if kind is FunctionType and value.__code__ is _GRAD_MODE_WRAPPER:  # @torch.no_grad() and its kin: it calls the function each time
            cells = dict(zip(value.__code__.co_freevars, (cell.cell_contents for cell in value.__closure__), strict=True))
            factory = cells["ctx_factory"]  # the decorator's own clone, bound to a grad mode of torch's (torch.no_grad.__call__ takes any self)
            made_by_torch = _type(factory) is MethodType and _type(factory.__self__) in _GRAD_MODES
            return made_by_torch and factory.__func__ is _getattr(_type(factory.__self__), "clone") and self._is_own_function(cells["func"])
        return False

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

    def _check_namespace(self, name: Any, namespace: Any, generated: frozenset[str] = frozenset(), bases: Any = ()) -> None:
        """Every special name of a class's namespace is one the rules let a class define (or what
        Python, typing, abc, enum and dataclasses put there themselves, or the very entry a class it
        derives from has: enum copies Flag's __or__ into each Flag); no key is anything but a str."""
        for key in namespace:
            if _type(key) is not _str:  # its own __hash__ and __eq__ could answer a lookup for another name later
                self.refuse(f"a class ({name}) built from a namespace with a key that is not a str itself")
            if not is_dunder(key):
                continue
            value = unrelayed(namespace[key])
            if key == "__dict__" and _type(value) is not GetSetDescriptorType:
                self.refuse(f"a class ({name}) defining __dict__ (library code reads obj.__dict__ as the object's attributes)")
            if key in self.definable or key in generated or value is CLASS_ONLY.get(key):
                continue
            if key in LIBRARY_MADE and self._library_function(value):
                continue
            if any(_dict_of(base).get(key, _ABSENT) is value for base in bases if not self._is_own_class(base)):
                continue  # what the class would inherit anyway
            self.refuse(f"a class ({name}) defining {key}, which is not among the special methods a class may define ({RULES})", key)
        match_args = namespace.get("__match_args__", ())
        if _type(match_args) is not _tuple or any(_type(a) is not _str or a.startswith("_") for a in match_args):
            self.refuse(f"__match_args__ of the class {name} naming private or special attributes")
        module = namespace.get("__module__", self.module_name)
        if module != self.module_name:
            self.refuse(f"a class ({name}) claiming to belong to the module {module!r}")

    def _is_own_function(self, obj: Any) -> bool:
        return _type(obj) is FunctionType and obj.__code__.co_filename == self.filename

    def _library_function(self, value: Any) -> bool:
        """A Python function compiled from no text of the file's (a classmethod's or staticmethod's too)."""
        inner = value.__func__ if _type(value) in (classmethod, staticmethod) else value
        return _type(inner) is FunctionType and inner.__code__.co_filename != self.filename

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

    def owned_somewhere(self, obj: Any) -> bool:
        """Whether a private name not found on obj may still be its own (an own instance or class)."""
        if _isinstance(obj, super):
            return False
        kind = obj if _isinstance(obj, type) else _type(obj)
        return self._is_own_function(obj) or any(self._is_own_class(k) for k in _mro_of(kind))

    # -- reading ----------------------------------------------------------------------------------

    def _path(self, obj: Any, name: str) -> str:
        """The dotted path the lists write the attribute with (torch.Tensor.data, numpy.ndarray.ctypes)."""
        if _isinstance(obj, ModuleType):
            owner = self.module_names.get(_id(obj), _getattr(obj, "__name__", "module"))
        else:
            klass = obj if _isinstance(obj, type) else _type(obj)
            owner = next((self._type_paths[_id(k)] for k in _mro_of(klass) if _id(k) in self._type_paths), None)
            owner = owner or f"{_module_of(klass)}.{_type_name(klass)}"
        return f"{owner}.{name}"

    def _member_verdict(self, obj: Any, name: str) -> str:
        """Why the public `name` may not be read on obj, an object the file does not own ("" if it
        may): decided by what the read would find, without running any code."""
        if _isinstance(obj, ModuleType):
            if _id(obj) not in self.modules:
                return "a module outside the allowed list"
            namespace = vars(obj)
            if name in namespace:
                value = namespace[name]
                if _id(value) in self.allowed.objects or _id(value) in self.modules or _isinstance(value, DATA):
                    return ""
                if self._rewrapped(obj, name, value):
                    return ""
                return "a module outside the allowed list" if _isinstance(value, ModuleType) else OFF_THE_LISTS
            if name in self.allowed.owners.get(_id(obj), (None, ()))[1] or "__getattr__" not in namespace:
                return ""  # made on demand by the module and named by the lists, or no such name: the read fails as itself
            return OFF_THE_LISTS  # a module that makes attributes on demand could make any
        klass = obj if _isinstance(obj, type) else _type(obj)
        found = class_entry(klass, name)
        if found is None and _isinstance(obj, type):
            found = class_entry(_type(obj), name)  # a class's attribute from its metaclass
        if found is None:
            return ""  # an instance's own attribute (judged as a value), or none: the read fails as itself
        holder, entry = found
        if not library_class(holder):
            return ""  # Python's own types and the pure-Python modules' classes: their public names
        if _id(entry) in self.allowed.members or _result_field(holder, entry):
            return ""
        return OFF_THE_LISTS

    def check_name(self, obj: Any, name: str) -> None:
        """Refuse reading `name` on obj if the rules say so (the value is checked afterwards). The
        object itself is checked too, should it have come back unchecked (from a call, say)."""
        try:
            verdict = self._kinds[_id(_type(obj))]
        except KeyError:
            verdict = None
        if verdict is None or (verdict and verdict != "class"):
            self.check_value(obj, "an object")
        if _isinstance(obj, WRAPPED_CONTEXT) and not is_dunder(name):
            self.check_name(_context_behind(obj), name)  # (its own save_for_backward and saved_tensors do the context's job)
            return
        if name[:1] == "_":
            if is_dunder(name):
                if name not in self.readable_dunders and not (name == "__setattr__" and obj is object):  # (its stand-in: standins.py)
                    self.refuse(f"the special attribute {name}", name)
                return
            owner = self._owner(obj, name)
            if name in PUBLIC_PRIVATE_NAMES or owner or (owner is None and self.owned_somewhere(obj)):
                return
            self.refuse(f"the private attribute {self._path(obj, name)}")
        if self._owner(obj, name):
            return
        cached = _isinstance(obj, ModuleType) or not self.owned_somewhere(obj)
        key = (_id(obj) if _isinstance(obj, ModuleType | type) else _id(_type(obj)), name)
        try:
            why = self._verdicts[key]
        except KeyError:
            why = self._member_verdict(obj, name)
            if cached:
                self._verdicts[key] = why
                self._kept_kinds.append(obj if _isinstance(obj, ModuleType | type) else _type(obj))
        if why:
            path = self._path(obj, name)
            self.refuse(f"{path}, which is {why}", path)

    def _rewrapped(self, module: ModuleType, name: str, value: Any) -> bool:
        """Whether `value`, found under a name the lists give on an allowed module, is a library
        function that wraps the object the lists name there (functools.wraps's __wrapped__, read
        from the function's own dictionary: no code runs). torch does that after the lists were
        resolved: its first import of torch._dynamo, which a call may make (torch.addr under
        torch.vmap), replaces torch.manual_seed with such a wrapper. From then on the wrapper is
        the listed object."""
        qualified = f"{self.module_names.get(_id(module), '')}.{name}"
        if qualified not in self.allowed.named:
            return False
        listed = self.allowed.named[qualified]
        inner = value
        for _ in range(WRAPPERS_DEEP):
            if _type(inner) is not FunctionType or inner.__code__.co_filename == self.filename:
                return False
            inner = _dict_get(inner.__dict__, "__wrapped__", _UNWRAPPED)
            if inner is listed:
                self.allowed.objects[_id(value)] = qualified
                self.allowed.kept.append(value)
                return True
        return False

    def check_value(self, value: Any, what: str, line: int = 0, shallow: bool = False, relay: bool = True) -> Any:
        """Refuse a value that reaches the interpreter or the grader. Judged by its class, looked up
        by identity (a class of the file's cannot answer for another); a container with its items
        (shallow: without them, for the walk over them). A callable of someone else's comes back
        as its relay (relays.py), unless `relay` is False (a read called at once)."""
        kind = _type(value)
        kind_id = _id(kind)
        try:
            verdict = self._kinds[kind_id]
        except KeyError:
            verdict = self._judge_kind(kind, value)
            self._kinds[kind_id] = verdict
            self._kept_kinds.append(kind)
            if self._relayed_kind(kind):
                self._not_plain.add(kind_id)  # (off the short ways of result and loop items)
        if verdict == "":  # the most common: a tensor, a number (the substitutes are functions)
            if kind_id not in self._not_plain:
                return value
            if kind_id in self._substituted_kinds:
                value = self._by_identity(value, what)
            return self.relayed(value) if relay else value
        if _id(value) in self._unlisted:  # a class or object no list names (torch.UntypedStorage, torch.load)
            path = self._unlisted[_id(value)]
            self.refuse(f"{what}, {path}, which is not on this challenge's allow-list", path)
        if verdict == "class":  # a class: a metaclass is handed out as its checked stand-in
            if _module_of(value) == self.module_name:
                self._is_own_class(value)  # checked as the file's own, whatever built it
            if self._raw_memory_class(value):
                self.refuse(f"{what}, the class {_type_name(value)}, which hands numpy or torch a raw memory address")
            return self.checked_metaclass(value) if issubclass(value, type) else value
        if verdict == "array":
            self._own_memory(value, what)
            return value
        if verdict == "container":
            if kind is _dict and _id(value) in self._module_namespaces():
                self.refuse(f"{what}, the globals of a module")
            if not shallow:
                self._check_contents(value, what)
            return value
        if verdict == "module":
            if _id(value) not in self.modules:
                self.refuse(f"{what}, a module outside the allowed list")
        elif verdict == "library":
            if _id(value) not in self.allowed.objects:
                self.refuse(f"{what}, an object of {_module_of(kind)}.{_type_name(kind)}, which no list of this challenge names")
        elif verdict:
            self.refuse(f"{what}, {verdict}")
        value = self._substitutes.get(_id(value), value)
        return self.relayed(value) if relay else value

    def relayed(self, value: Any, line: int = 0) -> Any:
        """value, or its relay if it is a callable of someone else's (relays.py): not a class, not a
        relay, not what runs the file's own functions."""
        kind = _type(value)
        if not self._relayed_kind(kind) or self._runs_the_files(value):
            return value
        kept = self._relays.get(_id(value))
        if kept is not None:
            return kept[1]
        relay = make_relay(value, self._relay_called, self.relayed)
        bound_to = _getattr(value, "__self__", None) if kind is BuiltinFunctionType else None
        if (
            kind is FunctionType
            or _id(value) in self.allowed.objects
            or (kind is BuiltinFunctionType and (bound_to is None or _isinstance(bound_to, ModuleType)))
        ):
            self._relays[_id(value)] = (value, relay)  # one that stays: `fn is torch.relu` holds, read after read
        return relay

    def _relayed_kind(self, kind: type) -> bool:
        """Whether objects of `kind` are callables handed out as relays: not classes, not the file's own
        objects (whose __call__ is the file's function, checked at its entry)."""
        calls = self._calls.get(_id(kind))
        if calls is None:
            mro = _mro_of(kind)
            names = set().union(*(_dict_of(k).keys() for k in mro))
            calls = "__call__" in names and not issubclass(kind, type) and not names & MORE_THAN_CALLABLE and not any(self._is_own_class(k) for k in mro)
            self._calls[_id(kind)] = calls
            self._kept_kinds.append(kind)
        return calls

    def _runs_the_files(self, value: Any) -> bool:
        """A relay, or a callable that runs a function of the file's at every call, or hands back what
        one returned (a functools cache of one): the function checks who called it at its entry."""
        kind = _type(value)
        if kind is FunctionType and (is_relay(value) or _dict.__contains__(vars(value), "__mro_entries__")):
            return True  # (typing.NamedTuple and TypedDict, functions that a class statement takes as bases)
        if kind is MethodType or kind is staticmethod:
            return self._runs_the_files(value.__func__)
        if kind is functools.partial:  # (it calls what it holds: a relay, or a function of the file's)
            return self._runs_the_files(value.func)
        if kind is _LRU_CACHE:
            return self._is_own_function(_dict_get(vars(value), "__wrapped__", None))
        return self._method_of_the_file(value)

    def _relay_called(self, target: Any) -> None:
        """A relay starts: refused if library C code called it (callers.py), as a function of the file's is."""
        library = self._callers.library_between(_getframe(1), self._is_files)
        if library is not None:
            self.refuse(
                f"{describe(target)}, which your file handed on as a value, run by {_library_name(library)}'s C code while it holds memory "
                "your code could free (the items of a list it walks): call it from your own code, and hand numpy and torch numbers, "
                "lists of numbers and tensors"
            )

    def _own_memory(self, array: Any, what: str) -> None:
        """A numpy array of numbers whose memory is numpy's own. No array of Python objects: numpy
        makes one over an array of numbers (numpy.ndarray(shape, dtype=object, buffer=int64_array):
        a number read as a pointer is any object), and its object loops call the file's comparisons
        while they hold pointers they own no reference to (a sort whose comparison empties a slot
        leaves a freed object in the array). Below it, only arrays of numbers (never a pointer read
        as a number), and at the end of its chain of bases no Python object:
        numpy.ndarray(shape, dtype, buffer=some_bytes) shares the memory of an immutable object, and
        torch.Tensor(array) makes a writable tensor over it. Read with ndarray's and dtype's own
        descriptors: no property of a subclass runs."""
        if _has_object(_array_dtype(array)):
            self.refuse(f"{what}, a numpy array of Python objects (dtype=object), {OBJECT_ARRAYS}")
        base = _array_base(array)
        while _isinstance(base, numpy.ndarray):
            if _has_object(_array_dtype(base)):
                self.refuse(f"{what}, a numpy array of numbers over an array of Python objects, {OBJECT_ARRAYS}")
            base = _array_base(base)
        if base is not None:
            self.refuse(
                f"{what}, a numpy array over the memory of a {_type_name(_type(base))} object, which no array may share: "
                "make a new array (numpy.array, numpy.zeros) and copy the values into it"
            )

    def called(self, line: int = 0) -> None:
        """A function of the file's starts (a generator: its first run, an `except` or `finally` block
        a `throw` or `close` reaches; a generator expression: each resume): refused if library C code
        called it (callers.py)."""
        self._check_callers(_getframe(1), "called")

    def resumed(self, value: Any, line: int = 0) -> Any:
        """A generator of the file's resumed at a `yield`, or a coroutine after an `await`: refused if
        library C code resumed it, and the value sent in checked."""
        self._check_callers(_getframe(1), "resumed")
        return self.check_value(value, "a value sent into a generator, or what `await` returned", line)

    def _check_callers(self, frame: FrameType, how: str) -> None:
        library = self._callers.library_between(frame, self._is_files)
        if library is not None:
            name = frame.f_code.co_qualname
            self.refuse(f"{name}() of your file, {how} by {_library_name(library)}'s C code, {CALLED_BACK}")

    def trust(self, module: CodeType) -> None:
        """The file's code objects each of whose entries is checked, where the walk of who called
        may stop (callers.py): its module's, which the runner runs once, and its functions' and
        lambdas', whose first act is the check. Not its generators, generator expressions,
        comprehensions and class bodies: C code can enter or resume those where nothing checks
        (delegation, a loop's next item, a `throw` passed on through C), so the walk goes on below
        them."""
        self._trusted = {_id(module): module}
        stack = [module]
        while stack:
            code = stack.pop()
            for constant in code.co_consts:
                if _type(constant) is CodeType:
                    stack.append(constant)
                    if constant.co_flags & _CO_OPTIMIZED and not constant.co_flags & _CO_RESUMABLE and constant.co_name not in _COMPREHENSIONS:
                        self._trusted[_id(constant)] = constant

    def _is_files(self, frame: FrameType) -> bool:
        return _id(frame.f_code) in self._trusted

    def refuse_object_array(self) -> NoReturn:
        """numpy about to make an array holding Python objects or pointers, wherever it was asked (arrays.py)."""
        kinds = "dtype=object, a structured dtype with an object field, or numpy's variable-width strings, dtype='T'"
        self._refuse(f"a numpy array of Python objects or pointers ({kinds}), {OBJECT_ARRAYS}")

    def _judge_buffer(self, array: Any) -> None:
        """An array numpy.ndarray's constructor made over a buffer, wherever it was called (arrays.py)."""
        self._own_memory(array, "numpy.ndarray(..., buffer=...) made")

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
        """A value of a class some substituted object has: its stand-in, refused, or itself. A bound
        method is made anew at each read, so no identity names it: it is judged as the read of its
        name on the object it is bound to (library code hands out `tensor.untyped_storage` read
        where no check saw it), and a C function of a module by its own identity."""
        if _id(value) in self.allowed.objects:
            return self._substitutes.get(_id(value), value)
        if _id(value) in self._unlisted:
            path = self._unlisted[_id(value)]
            self.refuse(f"{what}, {path}, which is not on this challenge's allow-list", path)
        kind = _type(value)
        if kind is MethodType and _id(value.__func__) in self._unlisted:  # a bound Python function no list names
            path = self._unlisted[_id(value.__func__)]
            self.refuse(f"{what}, {path}, which is not on this challenge's allow-list", path)
        if kind is MethodType:
            self.check_value(value.__self__, f"{what}, a method of an object that is")
            function = value.__func__
            holder = value.__self__ if _isinstance(value.__self__, type) else _type(value.__self__)
            name = _getattr(function, "__name__", "")
            if _type(name) is _str and not self.owned_somewhere(value.__self__) and class_entry(holder, name) is not None:
                self.check_name(value.__self__, name)
        elif kind is BuiltinFunctionType or kind is MethodWrapperType:
            bound_to = value.__self__
            if _type(bound_to) is ModuleType or bound_to is None:
                # a C function of a module: the lists must name it, or it is one of Python's built-ins
                if _id(value) not in self.allowed.objects and _id(value) not in self._substitutes and bound_to is not builtins:
                    self.refuse(f"{what}, the function {_getattr(bound_to, '__name__', 'module')}.{value.__name__}, which no list of this challenge names")
            else:  # a method of an object, made anew at each read: judged as the read of its name on that object
                self.check_name(bound_to, value.__name__)
                if value.__name__ == "numpy" and _isinstance(bound_to, torch.Tensor):  # tensor.numpy: no id names it
                    return lambda *args, **kwargs: copying_numpy(bound_to, *args, **kwargs)
        return self._substitutes.get(_id(value), value)

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
        if issubclass(kind, BaseException) or issubclass(kind, DATA):
            return ""  # an exception (torch.linalg.LinAlgError), data (torch.__version__, a str)
        if issubclass(kind, numpy.ndarray):
            return "array"  # its memory judged each time (_own_memory)
        if _id(kind) in self.allowed.objects:
            return ""  # made by a class the lists name, which the file may call (torch.no_grad(), functools.partial(...))
        if library_class(kind) and not issubclass(kind, VALUE_CLASSES) and not any(_module_of(k) in VALUE_MODULES for k in _mro_of(kind)):
            return "library"  # judged by identity: an allowed object (numpy.sum's dispatcher) or refused
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
                and (defines_raw_memory(_dict_of(k)) or getter_of_the_file(_dict_of(k), self.filename))
                for k in _mro_of(cls)
            )
            self._raw_classes[_id(cls)] = known
            self._kept_kinds.append(cls)  # its id stays its own
        return known

    def file_namespace(self, name: Any, namespace: Any) -> Any:
        """A copy of the namespace of a class the file builds without a class statement, checked,
        with the file's module as its module unless it names one (which the check refuses)."""
        if not _isinstance(namespace, _dict) or self.owned_somewhere(namespace):
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
                namespace = caps.file_namespace(name, namespace)
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
        they would decide it, in this one call: a public name already judged allowed on a tensor,
        number, class or allowed module, and a value of a kind judged harmless, or a method of obj
        written in C and named `name`."""
        try:
            owner = self._kinds[_id(_type(obj))]
            module = owner == "module"
            common = (
                name[:1] != "_"
                and (owner == "" or owner == "class" or module)
                and self._verdicts[(_id(obj) if module or owner == "class" else _id(_type(obj)), name)] == ""
                and (module or not self.owned_somewhere(obj))
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
                if _id(value) not in self._substitutes:
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
        if _isinstance(obj, ModuleType) and _id(value) in self.allowed.objects:
            return self._substitutes.get(_id(value), value)  # an object the lists name, read where they name it
        value = self.check_value(value, f"the attribute {name}", relay=False)
        return self._class_list(name, value) if name in CLASS_LISTS else value

    def getvalue(self, obj: Any, name: str, line: int = 0) -> Any:
        """obj.name read as a value, not called at once: a callable of someone else's comes as its relay."""
        value = self.getattr(obj, name, line)
        return value if self._calls.get(_id(_type(value))) is False else self.relayed(value)

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
        return self._returned(value, relay=True)

    def _returned(self, value: Any, relay: bool) -> Any:
        kind_id = _id(_type(value))
        try:  # check_value's common case, in this call (see getattr)
            if self._kinds[kind_id] == "" and kind_id not in self._not_plain:
                return value
        except KeyError:
            pass
        return self.check_value(value, "a value a call returned", relay=relay)

    def class_value(self, value: Any, line: int = 0) -> Any:
        """What a class statement assigns, checked as any value: a callable of someone else's comes as a
        relay that keeps the meaning it had in a class, a function for a descriptor (list.append binds
        as a method), a HeldRelay for the rest (torch.tanh binds as nothing; an Enum makes a
        functools.partial a member)."""
        return held(self.check_value(value, "what a class statement assigns"))

    def result_read(self, value: Any, line: int = 0) -> Any:
        """What a call returned, read from at once (make().field): checked as result() checks, with no relay."""
        return self._returned(value, relay=False)

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
            if self._kinds[kind_id] == "" and kind_id not in self._not_plain:
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
                if _type(name) is not _str or (name[:1] == "_" and name not in self.readable_dunders) or self.unjudged_name_refused(name, klass):
                    self.refuse(f"a class pattern reading the attribute {name!r} (read it as obj.{name} where the rules can judge the object)")
        return value

    def augmented_attribute(self, obj: Any, name: str, operation: str, value: Any, line: int = 0) -> None:
        """obj.name <op>= value, the read and the write checked."""
        setattr(self.write(obj, name), name, _getattr(operator, operation)(self.getattr(obj, name), value))

    def augmented_item(self, obj: Any, key: Any, operation: str, value: Any, line: int = 0) -> None:
        """obj[key] <op>= value, the read checked."""
        obj[key] = _getattr(operator, operation)(self.getitem(obj, key), value)

    def write(self, obj: Any, name: str, line: int = 0) -> Any:
        """obj itself, if the file may set or delete its attribute `name`: on its own objects, any
        name but a special one; on a library object, only what the `writable` list names."""
        if _isinstance(obj, WRAPPED_CONTEXT) and not is_dunder(name):
            self.write(_context_behind(obj), name)  # its __setattr__ passes the write on
            return obj
        if is_dunder(name):
            self.refuse(f"a change to the special attribute {name}")
        if is_sunder(name) and issubclass(obj if _isinstance(obj, type) else _type(obj), enum.Enum):
            # enum's own code (an Enum class's len, iteration and items) reads them where the file's code does not run
            self.refuse(f"a change to {name} of an Enum, which enum keeps for itself")
        if name == "attrname" and issubclass(_type(obj), functools.cached_property):
            # it writes what its function returns into an instance's own __dict__ under that name: any special name
            self.refuse("a change to a cached_property's attrname (it takes the name it is given in the class statement)")
        if self.owned_somewhere(obj):
            base = self._base_defining(obj, name)
            if base is not None and not library_class(base):
                self.refuse(
                    f"a change to {name} of {'your class' if _isinstance(obj, type) else 'an object of your class'} "
                    f"{_type_name(obj if _isinstance(obj, type) else _type(obj))}: {_module_of(base)}.{_type_name(base)} defines {name}, "
                    "and library code calls it on the object where your code does not run (call your attribute something else)"
                )
            if base is None and not self._library_member(obj, name):
                return ClassWrites(obj) if _isinstance(obj, type) else obj  # (a class keeps a relay as a class statement would: held)
        if not _isinstance(obj, type | ModuleType) and name[:1] != "_":
            found = class_entry(_type(obj), name)
            if found is not None and _id(found[1]) in self.allowed.writable:
                return obj  # x.requires_grad = True, x.grad = None
            if found is None and any(_id(k) in self.allowed.writable_any for k in _mro_of(_type(obj))):
                return obj  # ctx.dim = dim in an autograd Function's context
        path = self._path(obj, name)
        whose = "of torch's or numpy's on an object of your class" if self.owned_somewhere(obj) else "of an object the file did not make"
        self.refuse(f"a change to {path} (an attribute {whose}; only {', '.join(self._writable_names())} may be set)", path)

    def _base_defining(self, obj: Any, name: str) -> Any:
        """The first class of others that an object of the file's (or a class of the file's) derives
        from whose dictionary has `name`, where library code reads it on the object: any name of
        torch's and numpy's classes (torch.Tensor.__array__ calls self.numpy), and any name the
        special methods of the library classes a class may derive from read, or the methods they
        call, on any object (collections.abc.Generator.__next__ calls self.send, Counter.__repr__
        calls self.items, which dict defines, Mapping.__eq__ calls other.items): an object's own
        __dict__ must not answer for it. On an object, a data descriptor there takes the write itself
        (BaseException.args, Tensor.shape) and does not count, unless a class of the file's before
        it holds the name as plain data (then the write lands in the object's __dict__)."""
        instance = not _isinstance(obj, type)
        shadowed = False  # a class of the file's before it holds the name as plain data: a write goes to the object's __dict__
        for klass in _mro_of(_type(obj) if instance else obj):
            entry = _dict_of(klass).get(name, _ABSENT)
            if klass is object or entry is _ABSENT:
                continue
            if self._is_own_class(klass):
                shadowed = shadowed or not _hasattr(_type(entry), "__set__")
                continue
            if instance and not shadowed and _hasattr(_type(entry), "__set__"):
                continue
            if library_class(klass) or name in ALL_NAMES_CALLED:
                return klass  # (the C code of Python's own types reads no name on the object: a list subclass's self.index is the file's)
        return None

    def _library_member(self, obj: Any, name: str) -> bool:
        """Whether setting `name` on an object of the file's would set an entry of a library class
        it derives from (x.data on a subclass of torch.Tensor): judged as on the library's object."""
        found = class_entry(obj if _isinstance(obj, type) else _type(obj), name)
        return found is not None and library_class(found[0])

    def _writable_names(self) -> list[str]:
        return sorted(set(self.allowed.writable.values())) or ["nothing"]

    # -- the module ------------------------------------------------------------------------------

    def builtins(self) -> dict[str, Any]:
        return self._builtins

    def namespace(self, module_name: str) -> dict[str, Any]:
        """The globals the rewritten module runs in."""
        self.module_name = module_name
        return {
            "__name__": module_name,
            "__builtins__": self._builtins,
            "__file__": self.filename,
            rewrite.GETATTR: self.getattr,
            rewrite.VALUE_ATTRIBUTE: self.getvalue,
            rewrite.VALUE: self.relayed,
            rewrite.GETITEM: self.getitem,
            rewrite.WRITE: self.write,
            rewrite.OWN_CLASS: self.own_class,
            rewrite.CHECK: self.check,
            rewrite.SUBJECT: self.subject,
            rewrite.RESULT: self.result,
            rewrite.RESULT_READ: self.result_read,
            rewrite.CLASS_VALUE: self.class_value,
            rewrite.ITEMS: self.items,
            rewrite.UNPACKED: self.unpacked,
            rewrite.DECORATOR: self.decorator,
            rewrite.BOUND: self.check_value,  # a value someone else bound: a parameter, `with`/`except ... as`, `await`
            rewrite.CALLED: self.called,
            rewrite.RESUMED: self.resumed,
            rewrite.AUGMENTED_ATTRIBUTE: self.augmented_attribute,
            rewrite.AUGMENTED_ITEM: self.augmented_item,
        }


def _context_behind(wrapper: Any) -> Any:
    """The autograd context a functorch wrapper passes reads and writes on to (read with object's own
    __getattribute__: no code of the wrapper's runs)."""
    inner = wrapper
    while _isinstance(inner, WRAPPED_CONTEXT):
        inner = object.__getattribute__(inner, _INNER_CONTEXT)
    return inner


def _same_entry(entry: Any, value: Any) -> bool:
    """Whether a class's entry is value, or a staticmethod of it (what reading it on the class gives)."""
    return entry is value or (_type(entry) is staticmethod and entry.__func__ is value)


def _library_made(value: Any) -> bool:
    """A special method that namedtuple or typing's Protocol puts in every class it makes, and no
    other function: namedtuple's __new__ (compiled by namedtuple, whose globals hold tuple.__new__
    as _tuple_new), __repr__ and __getnewargs__, Protocol's __init__ and __subclasshook__."""
    inner = value.__func__ if _type(value) in (staticmethod, classmethod) else value
    if _type(inner) is not FunctionType:
        return False
    if inner.__code__ in LIBRARY_MADE_CODE:
        return True
    made_by_namedtuple = _dict_get(inner.__globals__, "_tuple_new") is tuple.__new__ and inner.__code__.co_filename == "<string>"
    return made_by_namedtuple and _type(value) is staticmethod


def _unlisted_member_names(allowed: Allowed) -> frozenset[str]:
    """Public names of the entries of the value classes' dictionaries that no list allows: a name
    read where no object can be judged (a class pattern, dataclasses' own code) is refused when it
    is one of them (data, on a tensor)."""
    names = set()
    for klass in VALUE_CLASSES:
        for base in _mro_of(klass):
            if library_class(base):
                names |= {name for name, entry in _dict_of(base).items() if name[:1] != "_" and _id(entry) not in allowed.members}
    return frozenset(names)
