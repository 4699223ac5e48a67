"""Files named on a command line, read or written with one-line errors.

Every entry point that takes a path (``--path``, ``--spec``, ``-f``, ``-config``) reports a
missing file, a directory, a permission problem or an I/O error (``/proc/version`` written to)
as ``<flag> <path>: cannot read|write: <reason>``, the reason as the OS words it, never a
traceback. ``-`` is stdin/stdout where the caller allows it.
"""

from __future__ import annotations

import sys


class FileArgError(Exception):
    """A path argument that cannot be read or written; str() is the one-line message."""


def os_reason(e: OSError | UnicodeDecodeError) -> str:
    """The OS's words for the failure ("No such file or directory"), without errno noise."""
    if isinstance(e, UnicodeDecodeError):
        return f"not UTF-8 text (byte {e.start})"
    return e.strerror or str(e)


def _label(path: str, flag: str) -> str:
    return f"{flag} {path}" if flag else path


def read_bytes_arg(path: str, *, flag: str = "", stdin: bool = True) -> bytes:
    """The contents of ``path`` (``-``: stdin when ``stdin``); FileArgError names flag and path."""
    if stdin and path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise FileArgError(f"{_label(path, flag)}: cannot read: {os_reason(e)}") from None


def read_text_arg(path: str, *, flag: str = "", stdin: bool = True) -> str:
    """read_bytes_arg decoded as UTF-8; undecodable bytes are a FileArgError too."""
    if stdin and path == "-":
        return sys.stdin.read()
    data = read_bytes_arg(path, flag=flag, stdin=stdin)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FileArgError(f"{_label(path, flag)}: cannot read: {os_reason(e)}") from None


def write_text_arg(path: str, text: str, *, flag: str = "") -> None:
    """Write ``text`` to ``path`` (``-``: stdout); the file is written whole or the error named.

    The close is inside the try: a write to a file such as /proc/version fails there (EIO).
    """
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise FileArgError(f"{_label(path, flag)}: cannot write: {os_reason(e)}") from None
