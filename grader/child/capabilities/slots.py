"""Reads of classes and objects through the built-in types' own slots, bound once: a class or
metaclass of the submission's cannot answer them in its stead (no __getattribute__, __mro__ or
__eq__ of the file's runs)."""

_mro_of = type.__dict__["__mro__"].__get__
_dict_of = type.__dict__["__dict__"].__get__
_type_name = type.__dict__["__name__"].__get__
_module_of = type.__dict__["__module__"].__get__
_flags_of = type.__dict__["__flags__"].__get__
_super_this = super.__dict__["__thisclass__"].__get__
_super_self_class = super.__dict__["__self_class__"].__get__
_hasattr = hasattr
_getattr, _setattr, _delattr, _isinstance, _type = getattr, setattr, delattr, isinstance, type
# An object's identity as a key: object.__hash__ is its address, rotated (one key per live object),
# read without the audit event id() raises.
_id = object.__hash__
_str, _tuple, _dict = str, tuple, dict
HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made at run time (a class statement, type()), not one of C


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name[:2] == "__" and name[-2:] == "__"
