"""Compiled match expressions and feature matchers, with upstream's exact evaluation semantics.

An expression compiles to three small closures, chosen once per operator:

- ``on_flag(present)``: against a flag set (no value; value operators are false),
- ``on_value(values)``: against an attribute map or one instance's attributes,
- ``on_name(name)``: against an element name (``matchName``).

Errors are raised (``RuleError``) exactly where upstream raises them, which is at evaluation and
only when the erroneous branch is reached: an unknown operator or ``value`` on
``Exists``/``DoesNotExist`` fails whenever the expression is evaluated; a wrong value count, a
bad bound or regexp, or a bad ``type`` fails only when a value is actually compared (a missing
key or a flag element just does not match). Problems are also collected statically
(``Expr.problems``) for ``nfd rules validate``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nfd.lang.gostd.strconv import int64_or_none
from nfd.lang.gostd.strconv import quote as go_quote

VALID_OPS = frozenset(
    {
        "",
        "In",
        "NotIn",
        "InRegexp",
        "Exists",
        "DoesNotExist",
        "Gt",
        "Ge",
        "Lt",
        "Le",
        "GtLt",
        "GeLe",
        "IsTrue",
        "IsFalse",
    }
)
# Operators that look only at presence; everything else compares a value.
_PRESENCE_OPS = frozenset({"", "Exists", "DoesNotExist"})
# Operators whose comparison parses the *input* value and may fail on it.
_PARSING_OPS = frozenset({"Gt", "Ge", "Lt", "Le", "GtLt", "GeLe"})


MatchedElement = dict[str, str]


class RuleError(Exception):
    """An error that aborts evaluation of one rule (upstream: Execute returns an error)."""


def go_atoi(s: str) -> int | None:
    """strconv.Atoi: optional sign, ASCII digits, int64 range; None when Go would error."""
    return int64_or_none(s)


def go_quote_list(values: list[str]) -> str:
    """Go's ``%q`` of a []string: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def go_list(values: list[str]) -> str:
    """Go's ``%v`` of a []string: ``[a b]``."""
    return "[" + " ".join(values) + "]"


def _expr_str(op: str, values: list[str]) -> str:
    if not values:
        return f"{{op: {go_quote(op)}}}"
    return f"{{op: {go_quote(op)}, value: {go_quote_list(values)}}}"


def _raiser(msg: str) -> Callable[..., bool]:
    def f(*_: Any) -> bool:
        raise RuleError(msg)

    return f


def _problem_field(msg: str) -> str:
    """The expression's field a compile problem is about."""
    if msg.startswith("unknown operator"):
        return "op"
    if msg.startswith("value["):
        return msg.partition(":")[0]
    return "type" if "'type' field" in msg else "value"


def _problem_text(msg: str) -> str:
    return msg.partition(": ")[2] if msg.startswith("value[") else msg


_MAX_PATTERN_TEXT = 200


def _abbreviated(msg: str) -> str:
    """A regexp error with a long pattern quoted in it, cut to a readable length."""
    if len(msg) <= _MAX_PATTERN_TEXT:
        return msg
    head = msg[: _MAX_PATTERN_TEXT // 2]
    return f"{head}... ({len(msg)} characters)"


class Expr:
    """One compiled expression; ``key`` is the element name for matchExpressions ("" for matchName)."""

    __slots__ = (
        "key",
        "op",
        "values",
        "type",
        "is_dne",
        "can_raise",
        "problems",
        "on_flag",
        "on_value",
        "on_name",
    )

    def __init__(self, key: str, op: str, values: list[str], vtype: str, *, path: str = "") -> None:
        self.key = key
        self.op = op
        self.values = values
        self.type = vtype
        self.is_dne = op == "DoesNotExist"
        # (sub-field, message) for validation; runtime errors carry the field path too
        self.problems: list[tuple[str, str]] = []
        pre_error, test, value_error, note = _compile_test(op, values, vtype, path)
        for msg in (pre_error, value_error, note):
            if msg:
                self.problems.append((_problem_field(msg), _problem_text(msg)))
        if path:
            # the same field path as validation gives (``...matchExpressions.vendor.op``)
            pre_error = pre_error and f"{path}.{_problem_field(pre_error)}: {_problem_text(pre_error)}"
            value_error = value_error and f"{path}.{_problem_field(value_error)}: {_problem_text(value_error)}"
        # can_raise: evaluation may raise even with well-formed inputs (parsing the input value)
        self.can_raise = bool(pre_error or value_error) or op in _PARSING_OPS
        key_ = key
        if pre_error:
            r = _raiser(pre_error)
            self.on_flag = self.on_value = self.on_name = r
            return
        if op == "":
            self.on_flag = self.on_value = self.on_name = lambda _x: True
            return
        if op == "Exists":
            self.on_flag = lambda present: present
            self.on_value = lambda values: key_ in values
            self.on_name = lambda _n: True
            return
        if op == "DoesNotExist":
            self.on_flag = lambda present: not present
            self.on_value = lambda values: key_ not in values
            self.on_name = lambda _n: False
            return
        self.on_flag = lambda _present: False
        if value_error:
            msg = value_error

            def on_value_err(values: dict[str, str]) -> bool:
                if key_ in values:
                    raise RuleError(msg)
                return False

            self.on_value = on_value_err
            self.on_name = _raiser(msg)
            return
        assert test is not None
        t = test

        def on_value(values: dict[str, str]) -> bool:
            v = values.get(key_)
            return False if v is None else t(v)

        self.on_value = on_value
        self.on_name = t

    def describe(self) -> str:
        return (
            _expr_str(self.op, self.values)
            if not self.type
            else (
                f"{{op: {go_quote(self.op)}, value: {go_quote_list(self.values)}, type: {go_quote(self.type)}}}"
            )
        )


def _compile_test(
    op: str, values: list[str], vtype: str, path: str
) -> tuple[str | None, Callable[[str], bool] | None, str | None, str | None]:
    """(error raised on every evaluation, value predicate, error raised when a value is compared,
    static note: a bound that makes every comparison fail, reported by the predicate itself)."""
    if op not in VALID_OPS:
        return f"unknown operator {go_quote(op)}", None, None, None
    if op in _PRESENCE_OPS:
        if values:
            return (
                f"invalid expression, 'value' field must be empty for Op {go_quote(op)} (have {go_list(values)})",
                None,
                None,
                None,
            )
        return None, None, None, None
    if op in ("In", "NotIn", "InRegexp"):
        if not values:
            return (
                None,
                None,
                f"invalid expression, 'value' field must be non-empty for Op {go_quote(op)}",
                None,
            )
        if op == "In":
            vs = frozenset(values)
            return None, vs.__contains__, None, None
        if op == "NotIn":
            nvs = frozenset(values)
            return None, lambda v: v not in nvs, None, None
        # here, not at the top: RE2 (and libstdc++ with it) is ~4 MiB a worker pays only for a regexp
        from nfd.lang.goregex import GoRegexError, compile_go

        res = []
        for i, v in enumerate(values):
            try:
                res.append(compile_go(v).match_string)
            except GoRegexError as e:
                # upstream: "invalid expressiom, 'value' field must only contain valid regexps";
                # we name the value and give Go's own compile error
                return None, None, f"value[{i}]: {_abbreviated(str(e))}", None
        if len(res) == 1:
            return None, res[0], None, None
        return None, lambda v: any(m(v) for m in res), None, None
    if op in ("IsTrue", "IsFalse"):
        if values:
            return (
                None,
                None,
                f"invalid expression, 'value' field must be empty for Op {go_quote(op)} (have {go_list(values)})",
                None,
            )
        want = "true" if op == "IsTrue" else "false"
        return None, want.__eq__, None, None
    # numeric / version comparisons
    two = op in ("GtLt", "GeLe")
    if len(values) != (2 if two else 1):
        what = "exactly two elements" if two else "exactly one element"
        return (
            None,
            None,
            f"invalid expression, 'value' field must contain {what} for Op {go_quote(op)} (have {go_list(values)})",
            None,
        )
    desc = _expr_str(op, values)
    pfx = f"{path}: " if path else ""
    if vtype == "version":
        # here, not at the top: ~1 ms of imports (python -X importtime) that a one-shot worker
        # pays only for a version comparison
        from nfd.lang.semver import parse_version

        read = _reader(parse_version, "version", pfx)
        bounds_v = [parse_version(v) for v in values]
        for v, b in zip(values, bounds_v, strict=True):
            if b is None:
                msg = f"not a version {go_quote(v)} in {desc}"
                return None, _bad_bound(read, msg, pfx), None, msg
        return None, _ordered_test(op, bounds_v, read), None, None
    if vtype != "":
        return (
            None,
            None,
            f"invalid expression, 'type' field only accepts \"version\" value for Op {go_quote(op)} (have {go_quote(vtype)})",
            None,
        )
    read = _reader(go_atoi, "number", pfx, version_hint=True)
    bounds_i = [go_atoi(v) for v in values]
    for v, bi in zip(values, bounds_i, strict=True):
        if bi is None:
            msg = f"not a number {go_quote(v)} in {desc}" + _version_hint(v)
            return None, _bad_bound(read, msg, pfx), None, msg
    if two and bounds_i[0] >= bounds_i[1]:  # type: ignore[operator]
        msg = f"invalid expression, value[0] must be less than Value[1] for Op {go_quote(op)} (have {go_list(values)})"
        return None, _bad_bound(read, msg, pfx), None, msg
    return None, _ordered_test(op, bounds_i, read), None, None


def _version_hint(v: str) -> str:
    """Where a value that is no integer reads as a version ("5.15", "1.2.3"), point at
    ``type: version`` (upstream's MatchExpression ``type``: the ordering operators compare
    versions with it, integers without)."""
    if "." not in v:
        return ""
    from nfd.lang.semver import parse_version  # here, not at the top: as in _compile_test

    if parse_version(v) is None:
        return ""
    return "; the ordering operators compare integers: to compare versions, add type: version to the expression"


def _reader(parse: Callable[[str], Any], what: str, pfx: str, version_hint: bool = False) -> Callable[[str], Any]:
    """An input value read as the expression's type (number, version); a bad one is an error
    (``version_hint``: name ``type: version`` where an integer was expected and a version found)."""

    def read(v: str) -> Any:
        x = parse(v)
        if x is None:
            raise RuleError(f"{pfx}not a {what} {go_quote(v)}" + (_version_hint(v) if version_hint else ""))
        return x

    return read


def _bad_bound(read: Callable[[str], Any], msg: str, pfx: str) -> Callable[[str], bool]:
    # upstream parses the input first: a bad input reports itself, a good one reports the bound
    def t(v: str) -> bool:
        read(v)
        raise RuleError(pfx + msg)

    return t


def _ordered_test(op: str, b: list[Any], parse: Callable[[str], Any]) -> Callable[[str], bool]:
    """Gt/Ge/Lt/Le/GtLt/GeLe against the bounds `b`, input values read by `parse`."""
    r = b[0]
    if op == "Gt":
        return lambda v: parse(v) > r  # type: ignore[no-any-return]
    if op == "Ge":
        return lambda v: parse(v) >= r  # type: ignore[no-any-return]
    if op == "Lt":
        return lambda v: parse(v) < r  # type: ignore[no-any-return]
    if op == "Le":
        return lambda v: parse(v) <= r  # type: ignore[no-any-return]
    lo, hi = b[0], b[1]
    if op == "GtLt":
        return lambda v: lo < parse(v) < hi  # type: ignore[no-any-return]
    return lambda v: lo <= parse(v) <= hi  # type: ignore[no-any-return]


def _by_name(e: MatchedElement) -> str:
    return e["Name"]


class Term:
    """One ``matchFeatures`` term: a feature name plus matchExpressions and/or matchName."""

    __slots__ = ("feature", "lookup", "dom", "nam", "exprs", "name_expr", "inst_can_raise")

    def __init__(self, feature: str, exprs: list[Expr] | None, name_expr: Expr | None) -> None:
        self.feature = feature
        self.lookup = feature.lower()
        dom, sep, nam = feature.partition(".")
        if not sep:  # upstream: "invalid feature name", templating keys become (lower(feature), "")
            dom, nam = self.lookup, ""
        self.dom = dom
        self.nam = nam
        self.exprs = exprs
        self.name_expr = name_expr
        self.inst_can_raise = exprs is not None and any(e.can_raise for e in exprs)

    def evaluate(
        self,
        flags: set[str] | None,
        attrs: dict[str, str] | None,
        insts: list[dict[str, str]] | None,
        out: list[MatchedElement] | None,
        explain: bool = True,
    ) -> tuple[bool, str | None]:
        """(matched, why not). Appends matched elements to ``out`` when given (templates).
        ``explain=False`` leaves out the reason (the master never shows it; building it for
        every rule that does not match cost as much as the matching)."""
        matched = True
        why: str | None = None
        exprs = self.exprs
        if exprs is not None:
            matched, why = self._match_multi(exprs, flags, attrs, insts, out, self.inst_can_raise, explain)
        if matched and self.name_expr is not None:
            matched = self._match_names(self.name_expr, flags, attrs, insts, out)
            if not matched and explain:
                why = f"matchName {self.name_expr.describe()} matched no element"
        return matched, why

    @staticmethod
    def _match_multi(
        exprs: list[Expr],
        flags: set[str] | None,
        attrs: dict[str, str] | None,
        insts: list[dict[str, str]] | None,
        out: list[MatchedElement] | None,
        can_raise: bool,
        explain: bool = True,
    ) -> tuple[bool, str | None]:
        # Flags and attributes are a union: each expression must pass in one of them, except
        # DoesNotExist which must pass in both. Instances are evaluated separately, all
        # expressions against each instance.
        is_match = flags is not None or attrs is not None
        why: str | None = None
        elems: list[MatchedElement] | None = [] if out is not None else None
        if is_match:
            for e in exprs:
                mk = mv = False
                if flags is not None:
                    mk = e.on_flag(e.key in flags)
                    if mk:
                        if elems is not None:
                            elems.append({"Name": e.key})
                    elif e.is_dne:
                        is_match = False
                        break
                if attrs is not None:
                    mv = e.on_value(attrs)
                    if mv:
                        if elems is not None:
                            elems.append({"Name": e.key, "Value": attrs.get(e.key, "")})
                    elif e.is_dne:
                        is_match = False
                        break
                if not mk and not mv:
                    is_match = False
                    break
            if not is_match:
                if explain:
                    why = f"expression {go_quote(e.key)} {e.describe()} did not match"
                if elems is not None:
                    elems.clear()
            elif elems is not None:
                elems.sort(key=_by_name)
                out.extend(elems)  # type: ignore[union-attr]
        # instances: skipped only when the answer is already known and nothing could raise
        if insts and not (is_match and out is None and not can_raise):
            if out is None and not can_raise:
                for inst in insts:  # stop at the first instance that matches everything
                    for e in exprs:
                        if not e.on_value(inst):
                            break
                    else:
                        return True, None
            else:
                found = False
                for inst in insts:
                    for e in exprs:
                        if not e.on_value(inst):
                            break
                    else:
                        found = True
                        if out is not None:
                            out.append(inst)
                if found:
                    return True, None
        if not is_match and why is None and explain:
            why = "no instance matched all expressions"
        return is_match, why

    @staticmethod
    def _match_names(
        e: Expr,
        flags: set[str] | None,
        attrs: dict[str, str] | None,
        insts: list[dict[str, str]] | None,
        out: list[MatchedElement] | None,
    ) -> bool:
        # every name is tested (a parse error on any of them fails the rule) unless nothing can
        # raise and no template needs the matched elements
        test = e.on_name
        early = out is None and not e.can_raise
        ret: list[MatchedElement] = []
        found = False
        if flags:
            for k in flags:
                if test(k):
                    found = True
                    if early:
                        return True
                    ret.append({"Name": k})
        if attrs:
            for k, v in attrs.items():
                if test(k):
                    found = True
                    if early:
                        return True
                    ret.append({"Name": k, "Value": v})
        if out is not None:
            ret.sort(key=_by_name)
        if insts:
            for inst in insts:
                hit = False
                for k in inst:
                    if test(k):
                        hit = True
                        if early:
                            return True
                if hit:
                    found = True
                    ret.append(inst)
        if out is not None:
            out.extend(ret)
        return found


class Matcher:
    """A ``matchFeatures`` list: logical AND over terms, fail-fast like the master."""

    __slots__ = ("terms",)

    def __init__(self, terms: list[Term]) -> None:
        self.terms = terms

    def evaluate(
        self,
        flags: dict[str, set[str]],
        attrs: dict[str, dict[str, str]],
        insts: dict[str, list[dict[str, str]]],
        collect: bool,
        explain: bool = True,
    ) -> tuple[bool, dict[str, dict[str, list[MatchedElement]]] | None, str | None]:
        """(matched, template data when ``collect``, why not: None unless ``explain``)."""
        data: dict[str, dict[str, list[MatchedElement]]] | None = {} if collect else None
        for idx, term in enumerate(self.terms):
            out: list[MatchedElement] | None = None
            if data is not None:
                dd = data.setdefault(term.dom, {})
            name = term.lookup
            f = flags.get(name)
            a = attrs.get(name)
            i = insts.get(name)
            if f is None and a is None and i is None:
                if not explain:
                    return False, None, None
                return False, None, f"matchFeatures[{idx}]: feature {go_quote(term.feature)} not present"
            if data is not None:
                out = dd.setdefault(term.nam, [])
            ok, why = term.evaluate(f, a, i, out, explain)
            if not ok:
                if not explain:
                    return False, None, None
                return False, None, f"matchFeatures[{idx}] ({term.feature}): {why or 'did not match'}"
        return True, data, None
