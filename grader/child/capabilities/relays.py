"""Relays: how a callable of someone else's reaches the file's hands as a value.

numpy's and torch's C code walks a list of the file's through a borrowed pointer to its items while
it calls their special methods, and those can lead to library code that calls whatever callable the
file stored where that code looks (a factory, a key, a comparison, a name an object answers to). A
callable of CPython's or a library's (list.clear, functools.partial(next, ...), a map of them) runs
there with none of the file's code running, so the check of who called (callers.py) never looks.

So a callable of someone else's is never handed to the file as a value: every attribute read that
is not called at once, every call's result, loop item, subscript, import and built-in name read as
a value gives a relay instead, a Python function that checks who called it (as each function of the
file's does at its entry) and then calls what it stands for. A callable called where it is read
(torch.exp(x), items.clear()) is called by the file's own code and needs no relay. What runs the
file's own functions (its functions, their bound methods, staticmethods, torch's grad-mode
decorators and functools' caches of them) needs none either: those functions check at their entry.
"""

from collections.abc import Callable
from types import FunctionType
from typing import Any

from .slots import _getattr, _str, _type


def make_relay(target: Any, check: Callable[[Any], None], relayed: Callable[[Any], Any]) -> FunctionType:
    """A function that calls `check(target)`, then `target` with the arguments it was given, and
    hands back what it returned through `relayed` (a callable it made comes as a relay too:
    getattr called by a map of CPython's hands back items.clear as one)."""

    def relay(*args: Any, **kwargs: Any) -> Any:
        check(target)
        return relayed(target(*args, **kwargs))

    for name in ("__name__", "__qualname__", "__module__"):
        value = _getattr(target, name, None)
        if _type(value) is _str:
            setattr(relay, name, value)
    doc = _getattr(target, "__doc__", None)
    relay.__doc__ = doc if _type(doc) is _str else None
    return relay


RELAY_CODE = make_relay(len, len, len).__code__


class HeldRelay:
    """The relay a class statement holds for a callable that is no descriptor (torch.tanh, a
    functools.partial): an object, not a function, so that the class keeps the meaning the callable
    had there (no method binds it; an Enum makes it a member). A function relay stands for one that
    is a descriptor (list.append binds as a method, as the relay does)."""

    __slots__ = ("_relay",)

    def __init__(self, relay: FunctionType) -> None:
        if _type(relay) is not FunctionType or relay.__code__ is not RELAY_CODE:
            raise TypeError("a HeldRelay holds a relay")  # (type(held)(f) would stand for anything the file chose)
        self._relay = relay

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._relay(*args, **kwargs)

    @property
    def __name__(self) -> str:  # type: ignore[override]
        return self._relay.__name__

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self._relay.__doc__


def held(value: Any) -> Any:
    """What a class keeps for `value`: a relay of a callable that is no descriptor as a HeldRelay
    (torch.tanh set on a class binds as nothing), anything else as it is."""
    if _type(value) is FunctionType and value.__code__ is RELAY_CODE and not hasattr(_type(relay_target(value)), "__get__"):
        return HeldRelay(value)
    return value


class ClassWrites:
    """What `Class.name = value` stores into, for a class of the file's: the value as the class keeps
    it (held), through the class's own setattr."""

    __slots__ = ("_class",)

    def __init__(self, klass: type) -> None:
        object.__setattr__(self, "_class", klass)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(ClassWrites._class.__get__(self), name, held(value))  # type: ignore[attr-defined]

    def __delattr__(self, name: str) -> None:
        delattr(ClassWrites._class.__get__(self), name)  # type: ignore[attr-defined]


def is_relay(value: Any) -> bool:
    kind = _type(value)
    return (kind is FunctionType and value.__code__ is RELAY_CODE) or kind is HeldRelay


def unrelayed(value: Any) -> Any:
    """What a relay stands for, or the value itself."""
    return relay_target(value) if is_relay(value) else value


def relay_target(relay: Any) -> Any:
    """What a relay stands for (read from its closure: the file cannot read a closure)."""
    if _type(relay) is HeldRelay:
        relay = HeldRelay._relay.__get__(relay)  # type: ignore[attr-defined]
    cells = dict(zip(relay.__code__.co_freevars, relay.__closure__ or (), strict=True))
    return cells["target"].cell_contents


def describe(target: Any) -> str:
    """A callable's name for a message: its qualified name, or its class's."""
    module = _getattr(target, "__module__", None)
    name = _getattr(target, "__qualname__", None)
    if _type(name) is not _str:
        kind = _type(target)
        return f"a {kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else f"a {kind.__qualname__}"
    return f"{module}.{name}" if _type(module) is _str and module not in ("builtins", "") else name
