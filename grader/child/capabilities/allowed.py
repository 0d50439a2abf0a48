"""The allow-lists as objects: each qualified name of the rules (grader/rules.toml, narrowed by the
problem) resolved once per process to the object it names, so that every later decision is an
identity test, never a name pattern.

- `modules`: the allowed modules, by identity.
- `objects`: the callables and classes a module attribute may hold (torch.exp, numpy.ndarray).
- `members`: the entries of library classes' dictionaries a read may find (the descriptor of
  torch.Tensor.view, of torch.Tensor.shape), by identity; `writable` the ones that may be set.
A name that does not resolve (a function this torch or numpy does not have) is left out and listed
in `missing`.
"""

import builtins
import importlib
from dataclasses import dataclass, field
from types import BuiltinFunctionType, ModuleType
from typing import Any

import numpy
import torch

_dict_of = type.__dict__["__dict__"].__get__
_mro_of = type.__dict__["__mro__"].__get__
_module_of = type.__dict__["__module__"].__get__
_id = object.__hash__
# Data: a number, a string, a dtype. Reading it from a module or a library object gives no capability.
DATA = (int, float, complex, str, bytes, bool, type(None), type(...), torch.dtype, torch.device, torch.layout, torch.memory_format, numpy.dtype)
LIBRARIES = ("torch", "numpy")  # whose classes' members are judged by the lists (Python's own types keep their public names)


def library_class(klass: type) -> bool:
    """Whether a class is torch's or numpy's (its module's top-level name, read from the type's own slot)."""
    module = _module_of(klass)
    return type(module) is str and module.partition(".")[0] in LIBRARIES


@dataclass
class Allowed:
    modules: dict[int, ModuleType] = field(default_factory=dict)  # id -> module
    module_names: dict[int, str] = field(default_factory=dict)  # id -> its dotted name as the lists write it
    objects: dict[int, str] = field(default_factory=dict)  # id -> qualified name: what a module attribute may hold
    members: dict[int, str] = field(default_factory=dict)  # id of a class-dictionary entry -> qualified name
    writable: dict[int, str] = field(default_factory=dict)  # id of a class-dictionary entry that may be set -> name
    writable_any: set[int] = field(default_factory=set)  # ids of classes on whose instances any public name may be set
    owners: dict[int, tuple[Any, set[str]]] = field(default_factory=dict)  # id of a module or class -> (it, its allowed names)
    named: dict[str, Any] = field(default_factory=dict)  # qualified name -> the object it names
    kept: list[Any] = field(default_factory=list)  # every object named, so that no id is reused
    missing: list[str] = field(default_factory=list)
    unlisted: dict[int, str] = field(default_factory=dict)  # id of a public object of the allowed modules no list names -> its path
    unlisted_kinds: set[int] = field(default_factory=set)  # ids of their classes

    def add_owner(self, owner: Any, name: str) -> None:
        self.owners.setdefault(_id(owner), (owner, set()))[1].add(name)


def class_entry(klass: type, name: str) -> tuple[type, Any] | None:
    """(the class of the MRO whose dictionary holds `name`, the entry), read without running code."""
    for base in _mro_of(klass):
        namespace = _dict_of(base)
        if name in namespace:
            return base, namespace[name]
    return None


def _walk(start: Any, parts: list[str]) -> tuple[Any, Any, str] | None:
    """(owner, value, last name) of a dotted path from `start`; a class's names are its dictionaries'."""
    owner, value = None, start
    for part in parts:
        owner = value
        if isinstance(value, type):
            entry = class_entry(value, part)
            if entry is None:
                return None
            value = entry[1]
        else:
            try:
                value = vars(value)[part] if isinstance(value, ModuleType) and part in vars(value) else getattr(value, part)
            except AttributeError:
                return None
    return owner, value, parts[-1]


def _resolve(modules: dict[str, ModuleType], name: str) -> tuple[Any, Any, str] | None:
    """(owner, object, last name) of a qualified name, from the longest module path it starts with."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:cut])
        if head in modules:
            return _walk(modules[head], parts[cut:])
    return None


_RESOLVED: dict[tuple, Allowed] = {}


def resolve(config: dict[str, Any]) -> Allowed:
    """The lists of a child's config as objects; made once per process for the same lists (the
    warm pool's server makes them before it forks)."""
    key = tuple(tuple(config[k]) for k in ("modules", "submodules", "functions", "attributes", "writable"))
    if key in _RESOLVED:
        return _RESOLVED[key]
    allowed = Allowed()
    modules: dict[str, ModuleType] = {}
    for path in [*config["modules"], *config["submodules"]]:
        try:
            module = importlib.import_module(path)
        except ImportError:
            allowed.missing.append(path)
            continue
        modules[path] = module
        allowed.modules[_id(module)] = module
        allowed.module_names.setdefault(_id(module), path)
        parent, _, child = path.rpartition(".")
        if parent in modules:
            allowed.add_owner(modules[parent], child)
    lookup = dict(modules)
    for path in ("torch.autograd.function",):  # where torch.autograd.Function's context lives (its instances reach the file)
        lookup.setdefault(path, importlib.import_module(path))
    for name in [*config["functions"], *config["attributes"]]:
        found = _resolve(lookup, name)
        if found is None:
            allowed.missing.append(name)
            continue
        owner, value, last = found
        allowed.kept += [owner, value]
        allowed.named[name] = value
        allowed.add_owner(owner, last)
        if isinstance(owner, type):
            allowed.members[_id(value)] = name
            if isinstance(value, classmethod | staticmethod):  # read through the class, a classmethod is bound anew
                allowed.objects[_id(value.__func__)] = name
        else:
            allowed.objects[_id(value)] = name
    for name in config["writable"]:
        owner_path, _, last = name.rpartition(".")
        found = _resolve(lookup, owner_path if last == "*" else name)
        if found is None:
            allowed.missing.append(name)
        elif last == "*":  # any public name may be set on the instances of this class (a context's stash)
            allowed.writable_any.add(_id(found[1]))
        else:
            allowed.writable[_id(found[1])] = name
        if found is not None:
            allowed.kept.append(found[1])
    allowed.unlisted = _unlisted(allowed, config.get("builtins", ()))
    _RESOLVED[key] = allowed
    return allowed


def _unlisted(allowed: Allowed, builtin_names: Any = ()) -> dict[int, str]:
    """The public objects of the allowed modules, and of their public classes' dictionaries, that
    no list names (torch.load, typing.get_type_hints, torch.UntypedStorage): refused by identity
    wherever they turn up, also where no read hands them out (a copy of a module's namespace in a
    function's __dict__). An object that a name on the lists also leads to is allowed; data (a
    number, a string) is no capability and is shared."""
    named = set(allowed.objects) | set(allowed.members) | set(allowed.modules)
    named |= {_id(getattr(builtins, name)) for name in builtin_names if hasattr(builtins, name)}  # str is also typing.Text
    found: dict[int, str] = {}

    def consider(path: str, value: Any) -> None:
        if isinstance(value, (*DATA, tuple, frozenset, ModuleType)):  # (a module is judged as one: allowed or not)
            return
        if _id(value) not in named:
            found.setdefault(_id(value), path)
            allowed.unlisted_kinds.add(_id(type(value)))
            allowed.kept.append(type(value))

    for ident, module in allowed.modules.items():
        prefix = allowed.module_names[ident]
        for name, value in list(vars(module).items()):
            if name.startswith("_"):
                continue
            consider(f"{prefix}.{name}", value)
            if isinstance(value, type) and (library_class(value) or _id(value) not in named):  # (an allowed class of Python's: its public names)
                for member, inner in list(_dict_of(value).items()):
                    if not member.startswith("_"):
                        consider(f"{prefix}.{name}.{member}", inner)
    allowed.kept += [module for module in allowed.modules.values()]
    return found


def bound_entry(method: Any) -> tuple[type, Any] | None:
    """The class-dictionary entry a bound C method was made from (x.view is torch.Tensor.view bound to
    x): looked up by its name on the class of what it is bound to."""
    if type(method) is not BuiltinFunctionType or method.__self__ is None or isinstance(method.__self__, ModuleType):
        return None
    bound_to = method.__self__
    return class_entry(bound_to if isinstance(bound_to, type) else type(bound_to), method.__name__)
