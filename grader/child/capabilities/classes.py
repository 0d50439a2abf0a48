"""The file's own classes, and the classes library metaclasses build while it runs: what their
namespaces may hold.

A class's special names decide what numpy, torch and the interpreter do with its objects. The file's
classes may define the special methods the rules list (grader/rules.toml, [special_methods] define),
which checks.py enforces; here is what holds whatever built the class: no raw-memory special name
(numpy and torch read them on objects to find memory by address) answers from an object's own
dictionary, and a library metaclass whose __new__ is written in Python checks the namespace of every
class it builds while the submission runs.
"""

from collections.abc import Callable
from types import FunctionType, GetSetDescriptorType
from typing import Any, NoReturn

from .slots import HEAP_TYPE, _dict, _dict_of, _flags_of, _getattr, _id, _isinstance, _module_of, _mro_of, _setattr, _str, _type, _type_name

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
