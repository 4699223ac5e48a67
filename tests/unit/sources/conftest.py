from __future__ import annotations

import pytest


@pytest.fixture
def tree(tmp_path):
    """A scratch host root: tree(rel, content) writes a file, returns the root path."""

    def write(rel: str, content: str | bytes = "") -> str:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
        return str(tmp_path)

    write.root = str(tmp_path)  # type: ignore[attr-defined]
    return write
