"""Raw bytes of a ctypes structure field, read and written by offset and size (pynvml's
structures declare some byte arrays as ``c_char``, whose attribute access cuts at the first NUL)."""

from __future__ import annotations

import ctypes
from typing import Any


def field_bytes(struct: Any, name: str) -> bytes:
    """A ctypes structure field's raw bytes, whatever pynvml declares its elements as: the fabric
    info's ``clusterUuid`` is ``c_char * 16`` up to nvidia-ml-py 12.575 (read as ``bytes`` cut at
    the first NUL) and ``c_ubyte * 16`` from 13.580."""
    f = getattr(type(struct), name)
    return ctypes.string_at(ctypes.addressof(struct) + f.offset, f.size)


def set_field_bytes(struct: Any, name: str, data: bytes) -> None:
    """Write ``data`` into a ctypes structure field's storage (the fake NVML's side of ``field_bytes``)."""
    f = getattr(type(struct), name)
    ctypes.memmove(ctypes.addressof(struct) + f.offset, data, min(len(data), f.size))
