"""``__eq__`` and ``__repr__`` as ``@dataclass`` generates them, over a class's ``_FIELDS``, for
the classes on the one-shot worker's path: importing ``dataclasses`` (and ``inspect`` with it)
is a measurable part of a one-shot run (docs/worker.md, "The one-shot wall")."""

from __future__ import annotations

from typing import Any, ClassVar


class Record:
    """Compared by value (same class, equal fields in order), unhashable, and shown as
    ``Name(field=value, ...)``; subclasses write their ``__init__`` and name ``_FIELDS``."""

    __slots__ = ()
    _FIELDS: ClassVar[tuple[str, ...]] = ()
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Record)
        return self._values() == other._values()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self._FIELDS) + ")"
