"""Stand-ins: the library functions a file gets in place of the real ones, where the real one would
do, on the file's behalf, what the checks would refuse.

- functools.wraps and update_wrapper take attribute names as data: the stand-ins take only their
  documented defaults, and copy each value checked.
- enum's functional API and type.__new__ build classes from names: the names are checked.
- dataclasses compiles its fields' names into code and reads fields by name: dataclass, fields,
  replace, asdict and astuple check the names, and copy values without copy.deepcopy.
- typing.get_origin can hand out the real `type`: its answer is checked.
- object.__setattr__ (how a frozen dataclass sets a field after __init__) writes as a write would.
- Conversions copy: whatever reaches torch from an object that is not already a tensor (a numpy
  array, bytes, any buffer) is copied, and so is a tensor handed to numpy: no memory is shared
  between torch, numpy and a Python object (a write through one side would pass torch's version
  counter by, or rewrite an immutable object such as a one-byte bytes singleton).

`stand_ins(caps)` gives the (original, stand-in) pairs; the capability layer hands out the stand-in
wherever the original would be read.
"""

import copy
import dataclasses
import enum
import functools
import keyword
import typing
from types import ModuleType
from typing import Any

import numpy
import torch

from .classes import CURRENT, check_library_metaclasses
from .slots import _dict, _dict_of, _getattr, _hasattr, _isinstance, _mro_of, _setattr, _str, _tuple, _type, _type_name, is_dunder

TENSOR, NDARRAY = torch.Tensor, numpy.ndarray
_TENSOR_NUMPY = TENSOR.numpy


def _plain_copies() -> tuple[frozenset[type], frozenset[type]]:
    """The values dataclasses.asdict and astuple may copy (exactly these types, C types of the
    libraries: tensors, numpy's arrays and numbers, dtypes, devices), and numpy's among them, whose
    copies copy each object a value of an object dtype holds (a structured numpy.void's too)."""
    numbers = {kind for kind in vars(numpy).values() if _isinstance(kind, type) and issubclass(kind, numpy.generic) and kind is not numpy.object_}
    numpy_values = frozenset({numpy.ndarray, *numbers})
    return frozenset({torch.Tensor, torch.dtype, torch.device, *numpy_values}), numpy_values


PLAIN_COPIES, NUMPY_VALUES = _plain_copies()


def field_name(field: Any) -> Any:
    """A dataclasses.Field's name, read from the slot itself."""
    return dataclasses.Field.__dict__["name"].__get__(field) if _type(field) is dataclasses.Field else None


# -- conversions --------------------------------------------------------------------------------------


def unshared(value: Any) -> Any:
    """A numpy array copied, anything else as it is: memory shared between an array and a tensor
    takes numpy's writes without torch's version counter seeing them, so an index tensor autograd
    saved could be rewritten between the forward and the backward."""
    # numpy's own copy into a plain array: a subclass's copy() is the file's code (it could return the array itself)
    return numpy.array(value, copy=True, subok=False) if _isinstance(value, NDARRAY) else value


def copying_numpy(tensor: Any, *, force: bool = False) -> Any:
    """Tensor.numpy as the file gets it: a copy of the values, never a view of the tensor's memory."""
    return _TENSOR_NUMPY(tensor, force=force).copy()


def unshare_numpy_conversions() -> None:
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


def _conversions() -> list[tuple[Any, Any]]:
    """torch's conversions from other objects, each copying what is not a plain tensor already."""

    def from_numpy(array: Any) -> Any:
        return torch.from_numpy(unshared(array))

    def as_tensor(data: Any, *args: Any, **kwargs: Any) -> Any:
        if _type(data) is TENSOR:
            return torch.as_tensor(data, *args, **kwargs)
        return torch.as_tensor(unshared(data), *args, **kwargs)  # (as_tensor takes no buffer: bytes are refused by torch itself)

    def asarray(obj: Any, *args: Any, **kwargs: Any) -> Any:
        if _type(obj) is TENSOR:
            return torch.asarray(obj, *args, **kwargs)
        kwargs["copy"] = True  # a buffer (bytes), an array, a sequence: never a view of its memory
        return torch.asarray(unshared(obj), *args, **kwargs)

    return [(torch.from_numpy, from_numpy), (torch.as_tensor, as_tensor), (torch.asarray, asarray), (_TENSOR_NUMPY, copying_numpy)]


# -- names as data --------------------------------------------------------------------------------------


def _wrappers(caps: Any) -> list[tuple[Any, Any]]:
    """functools.update_wrapper and wraps, with their documented defaults only (`assigned=("__globals__",)`
    would copy another function's globals), every value copied checked (the __dict__ of a module is its globals)."""

    def check_defaults(assigned: Any, updated: Any) -> None:
        if assigned is not functools.WRAPPER_ASSIGNMENTS or updated is not functools.WRAPPER_UPDATES:
            caps.refuse("functools.wraps or functools.update_wrapper with attribute names of the file's choosing")

    def update_wrapper(wrapper: Any, wrapped: Any, assigned: Any = functools.WRAPPER_ASSIGNMENTS, updated: Any = functools.WRAPPER_UPDATES) -> Any:
        check_defaults(assigned, updated)
        if _isinstance(wrapped, ModuleType):
            caps.refuse("functools.wraps or functools.update_wrapper of a module")
        if not caps.owned_somewhere(wrapper):  # it writes the wrapper's attributes: a library object's are not the file's to write
            caps.refuse(f"functools.wraps or functools.update_wrapper onto a {_type_name(_type(wrapper))}, which your file did not make")
        for name in functools.WRAPPER_ASSIGNMENTS:
            try:
                value = _getattr(wrapped, name)
            except AttributeError:
                continue
            _setattr(wrapper, name, caps.check_value(value, f"the attribute {name}"))
        for key, value in _dict(_getattr(wrapped, "__dict__", {})).items():
            if _type(key) is not _str or not key.isidentifier() or is_dunder(key):  # as a write would be refused
                caps.refuse(f"functools.wraps or functools.update_wrapper copying the attribute {key!r}")
            caps.write(wrapper, key)  # as `wrapper.key = value` would be judged (a library class's method shadowed on an instance)
            _getattr(wrapper, "__dict__")[key] = caps.check_value(value, f"the attribute {key}")
        wrapper.__wrapped__ = wrapped
        return wrapper

    def wraps(wrapped: Any, assigned: Any = functools.WRAPPER_ASSIGNMENTS, updated: Any = functools.WRAPPER_UPDATES) -> Any:
        check_defaults(assigned, updated)
        return functools.partial(update_wrapper, wrapped=wrapped)

    return [(functools.update_wrapper, update_wrapper), (functools.wraps, wraps)]


def _check_enum_functional_api() -> None:
    """The functional API of enum (Enum("E", names)) builds a class from names: patched once per
    process so that each member is checked, a str or a pair (a tuple or a list) whose name is a str,
    each of exactly those types, read once; enum is handed that very list (a member of another type
    could give enum another name than it gave this check). It asks the latest submission's checks."""
    create = enum.EnumType.__dict__["_create_"]  # a method of the metaclass: cls is the enum
    if getattr(create, "checked", False):
        return

    def _create_(cls: Any, class_name: Any, names: Any, **kwargs: Any) -> Any:
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
                    CURRENT[0].refuse("enum's functional API with a member that is neither a name nor a (name, value) pair")
            members = [member if _type(member) is _str else member[0] for member in checked]
        for name in members:
            if _type(name) is not _str or name.startswith("_"):
                CURRENT[0].refuse(f"enum's functional API with the member name {name if _type(name) is _str else 'of another type than str'!r}")
        kwargs["module"] = CURRENT[0].module_name  # the file's class, checked as a class statement's (enum would name itself)
        return CURRENT[0].own_class(create(cls, class_name, checked, **kwargs))

    _create_.checked = True  # type: ignore[attr-defined]
    enum.EnumType._create_ = _create_  # type: ignore[method-assign]


def _type_new(caps: Any) -> list[tuple[Any, Any]]:
    def type_new(mcs: Any, *args: Any, **kwargs: Any) -> Any:
        """type.__new__ (reached as super(type, type).__new__): a class built from a namespace
        is checked as type() checks it, and is the file's own."""
        if len(args) != 3:
            return caps.check_value(type.__new__(mcs, *args, **kwargs), "what type.__new__ returned")
        namespace = caps.file_namespace(args[0], args[2])
        return caps.own_class(type.__new__(mcs, args[0], args[1], namespace, **kwargs))

    return [(type.__new__, type_new)]


def _get_origin(caps: Any) -> list[tuple[Any, Any]]:
    def get_origin(tp: Any) -> Any:
        """typing.get_origin, its answer handed out as a read value is: typing.Type's origin is the real `type`."""
        return caps.check_value(typing.get_origin(tp), "what typing.get_origin returned")

    return [(typing.get_origin, get_origin)]


# -- dataclasses ------------------------------------------------------------------------------------------


def _owner_of(klass: type, name: str) -> Any:
    """The first class after `klass` in its MRO whose dictionary holds `name` (not a dataclass's own
    field, which dataclasses itself looks up), or None."""
    for base in _mro_of(klass)[1:]:
        namespace = _dict_of(base)
        if name in namespace and name not in namespace.get("__dataclass_fields__", {}):
            return base
    return None


def _dataclasses(caps: Any) -> list[tuple[Any, Any]]:
    def dataclass(cls: Any = None, /, **kwargs: Any) -> Any:
        """dataclasses.dataclass, once the class's field names are checked to be names:
        dataclasses pastes them into code it compiles itself."""

        def wrap(klass: Any) -> Any:
            fields = _dict_of(klass).get("__annotations__", {}) if _isinstance(klass, type) else {}
            for name in fields:
                if _type(name) is not _str or not name.isidentifier() or keyword.iskeyword(name) or is_dunder(name):
                    caps.refuse(f"a dataclass field named {name!r} (dataclasses compiles its fields' names into code)")
                if caps.unjudged_name_refused(name, klass):  # dataclasses' own code (asdict, replace, __match_args__) reads fields unchecked
                    caps.refuse(f"a dataclass field named {name!r}, a name the rules refuse on some objects (call the field something else)")
                owner = _owner_of(klass, name) if _isinstance(klass, type) and name not in _dict_of(klass) else None
                if owner is not None and caps.relayed(_dict_of(owner)[name]) is not _dict_of(owner)[name]:
                    # dataclasses takes getattr(cls, name) for the default: a class it derives from would hand in its own callable
                    caps.refuse(
                        f"a dataclass field named {name!r}, which {_type_name(owner)} defines: the field would take its "
                        f"{_type_name(owner)}.{name} as a default (call the field something else)"
                    )
            checked = {
                *fields,
                *(n for base in (_mro_of(klass)[1:] if _isinstance(klass, type) else ()) for n in _dict_of(base).get("__dataclass_fields__", {})),
            }
            before = set(_dict_of(klass)) if _isinstance(klass, type) else set()
            caps.making_dataclass.append(klass)  # slots=True makes a new class of this one's namespace, with dataclasses' methods in it
            try:
                made = dataclasses.dataclass(klass, **kwargs)
            finally:
                caps.making_dataclass.pop()
            if _isinstance(made, type):
                # what dataclasses added: its bookkeeping, and methods it compiled from its own text, which a class
                # statement of the file's may not always define itself (slots=True builds a new class from the old one's namespace)
                caps.generated_by_dataclasses(made, {name for name in set(_dict_of(made)) - before if is_dunder(name)})
            # Again on what dataclasses made: the file's own code (a default's descriptor) runs while it works
            # and could change the annotations it reads after the check above.
            made_fields = _dict_of(made).get("__dataclass_fields__", {}) if _isinstance(made, type) else {}
            names = [*made_fields, *(field_name(field) for field in made_fields.values()), *_dict_of(made).get("__match_args__", ())]
            for name in names:
                if _type(name) is not _str or name not in checked or caps.unjudged_name_refused(name, made):
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
                name = field_name(field)
                if _type(key) is not _str or _type(name) is not _str or name != key or not name.isidentifier() or is_dunder(name):
                    shown = repr(key) if _type(key) is _str else "whose name is not a str itself"
                    caps.refuse(f"dataclasses.{function} of a class with a field {shown} that dataclasses did not make")
                if caps.unjudged_name_refused(name, kind):
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

    return [
        (dataclasses.dataclass, dataclass),
        *((function, reading_fields(function)) for function in (dataclasses.replace, dataclasses.fields)),
        (dataclasses.asdict, copying_fields(dataclasses.asdict, as_dict=True)),
        (dataclasses.astuple, copying_fields(dataclasses.astuple, as_dict=False)),
    ]


def stand_ins(caps: Any) -> list[tuple[Any, Any]]:
    """(original, stand-in) for every library function the file gets a stand-in of, for the
    capabilities `caps` (the process-wide patches are made once, here)."""
    CURRENT[:] = [caps]  # one submission per process: the patches ask the latest
    unshare_numpy_conversions()
    _check_enum_functional_api()
    check_library_metaclasses()
    return [*_conversions(), *_wrappers(caps), *_type_new(caps), *_get_origin(caps), *_dataclasses(caps), *_object_setattr(caps)]


def _object_setattr(caps: Any) -> list[tuple[Any, Any]]:
    def object_setattr(obj: Any, name: Any, value: Any, /) -> None:
        """object.__setattr__, which a frozen dataclass's __post_init__ uses to set a field: judged
        as `obj.name = value` would be (the file's own objects, a public name; on others' only what
        the `writable` list names), then made past the class's own __setattr__."""
        if _type(name) is not _str:
            caps.refuse("object.__setattr__ with a name that is not a str itself")
        caps.write(obj, name)
        object.__setattr__(obj, name, value)

    return [(object.__dict__["__setattr__"], object_setattr)]
