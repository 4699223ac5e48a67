"""Validation errors that name the field path of the offending input."""

from __future__ import annotations


class ValidationError(ValueError):
    """One problem in an input object, located by a field path like ``spec.rules[2].name``."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


class ValidationErrors(ValueError):
    """Every problem found in one object; validation reports all of them, not only the first."""

    def __init__(self, errors: list[ValidationError]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors
