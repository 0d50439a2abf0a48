"""The built-ins a submission runs with: those the rules list (grader/rules.toml, [builtins]), the
attribute built-ins and vars() judging on the objects, the import statement's hook, and a stand-in
for `type`. Every other built-in name is there too, as a function that refuses it: a forbidden
built-in is a refusal that names it, never a NameError a file could take for absence."""

import builtins
import importlib
import sys
from collections.abc import Callable, Iterable
from types import FunctionType, GenericAlias, ModuleType
from typing import Any, NoReturn

from .classes import ClassOnly
from .slots import _delattr, _dict, _getattr, _isinstance, _setattr, _str, _tuple, _type

# What the interpreter itself looks up in a module's built-ins, whatever the rules say.
INTERPRETER_NAMES = ("__import__", "__build_class__")


def restricted_builtins(caps: Any, allowed: Iterable[str]) -> dict[str, Any]:
    """The built-ins for the capabilities `caps`: `allowed` by name, with the checking stand-ins."""
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
        if len(args) != 1 or not caps.owned_somewhere(args[0]) or _isinstance(args[0], FunctionType):
            caps.refuse("vars() of anything but an instance or class of the file's own")
        # (a copy: its callables of others', dataclasses' methods, as their relays: checks.py)
        namespace = {k: caps.relayed(v) for k, v in _dict(_getattr(args[0], "__dict__")).items() if _type(v) is not ClassOnly}
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
            caps.refuse(f"the import of {name}", f"import:{name}")
        module = importlib.import_module(name)
        if not fromlist:
            return importlib.import_module(name.partition(".")[0])
        # `from m import a` reads m.a where no call can be put: it reads from a module holding
        # only the checked values instead.
        chosen = ModuleType(name)
        for item in fromlist:
            if item == "*":
                caps.refuse(f"the import of * from {name}")
            _setattr(chosen, item, caps.getattr(module, item))  # (read as a value later, through the rewrite's VALUE)
        return chosen

    def __build_class__(func: Any, name: str, *bases: Any, **kwargs: Any) -> Any:
        return caps.own_class(names["__build_class__"](func, name, *bases, **kwargs))

    def refused(name: str) -> Callable[..., NoReturn]:
        def builtin(*args: Any, **kwargs: Any) -> NoReturn:
            caps.refuse(f"the built-in {name}", name)

        builtin.__name__ = name
        return builtin

    allowed = frozenset(allowed)
    restricted = {name: value if name in allowed else refused(name) for name, value in names.items() if not name.startswith("__") or name in allowed}
    checking = {"getattr": getattr, "hasattr": hasattr, "setattr": setattr, "delattr": delattr, "vars": vars, "type": caps.guarded_type}
    restricted |= {name: value for name, value in checking.items() if name in allowed}
    restricted |= {"__import__": __import__, "__build_class__": __build_class__, "__name__": "builtins"}
    return restricted


def guarded_type(caps: Any) -> type:
    """A stand-in for `type`: type(x) and isinstance(c, type) as usual; type(name, bases,
    namespace) and metaclasses derived from it have their namespace checked."""

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
                args = (args[0], args[1], caps.file_namespace(args[0], args[2]))
            if mcs is GuardedType:  # type(name, bases, namespace): the real type picks the metaclass
                return caps.own_class(_type(*args, **kwargs))
            return caps.own_class(_type.__new__(mcs, *args, **kwargs))  # a metaclass of the file's, derived from type

        def __class_getitem__(cls, item: Any) -> Any:
            return GenericAlias(GuardedType, item)  # calling it calls this type, never the real one

    GuardedType.__name__ = GuardedType.__qualname__ = "type"
    return GuardedType
