"""Tokenizer for Go text/template source, following text/template/parse's lexer rules.

Tokens are produced eagerly into a list; a lexing error becomes an ERROR token that
ends the stream, so the parser reports it where Go's parser would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from nfd.lang.gostd.strconv import quote as go_quote

LEFT_DELIM = "{{"
RIGHT_DELIM = "}}"
LEFT_COMMENT = "/*"
RIGHT_COMMENT = "*/"
SPACE_CHARS = " \t\r\n"

# Token kinds.
ERROR = "error"
EOF = "EOF"
TEXT = "text"
LDELIM = "{{"
RDELIM = "}}"
SPACE = "space"
BOOL = "bool"
CHAR = "char"  # a single printable ASCII character such as ','
CHARCONST = "charconst"
COMPLEX = "complex"
ASSIGN = "="
DECLARE = ":="
FIELD = "field"
IDENT = "identifier"
LPAREN = "("
RPAREN = ")"
NUMBER = "number"
PIPE = "|"
RAWSTRING = "rawstring"
STRING = "string"
VARIABLE = "variable"
DOT = "."
NIL = "nil"
# Keywords.
BLOCK = "block"
BREAK = "break"
CONTINUE = "continue"
DEFINE = "define"
ELSE = "else"
END = "end"
IF = "if"
RANGE = "range"
TEMPLATE = "template"
WITH = "with"

KEYWORDS = {
    "block": BLOCK,
    "break": BREAK,
    "continue": CONTINUE,
    "define": DEFINE,
    "else": ELSE,
    "end": END,
    "if": IF,
    "range": RANGE,
    "nil": NIL,
    "template": TEMPLATE,
    "with": WITH,
}
KEYWORD_KINDS = frozenset(KEYWORDS.values()) | {DOT}  # printed as <word> in errors


class Token(NamedTuple):
    kind: str
    val: str
    pos: int  # character offset into the source

    def describe(self) -> str:
        """Go's item.String(), used in `unexpected X in Y` messages."""
        if self.kind == EOF:
            return "EOF"
        if self.kind == ERROR:
            return self.val
        if self.kind in KEYWORD_KINDS:
            return f"<{self.val}>"
        if len(self.val) > 10:
            return go_quote(self.val[:10]) + "..."
        return go_quote(self.val)


def _is_alnum(c: str) -> bool:
    return c == "_" or c.isalpha() or c.isdecimal()


def _go_char_desc(c: str) -> str:
    """Go's %#U: U+002F '/'."""
    code = ord(c)
    if c.isprintable():
        return f"U+{code:04X} '{c}'"
    return f"U+{code:04X}"


def _has_left_trim(s: str, i: int) -> bool:
    return i + 1 < len(s) and s[i] == "-" and s[i + 1] in SPACE_CHARS


def _has_right_trim(s: str, i: int) -> bool:
    return i + 1 < len(s) and s[i] in SPACE_CHARS and s[i + 1] == "-"


def _at_right_delim(s: str, i: int) -> tuple[bool, bool]:
    if _has_right_trim(s, i) and s.startswith(RIGHT_DELIM, i + 2):
        return True, True
    if s.startswith(RIGHT_DELIM, i):
        return True, False
    return False, False


def _left_trim_len(s: str, i: int) -> int:
    j = i
    while j < len(s) and s[j] in SPACE_CHARS:
        j += 1
    return j - i


def lex(src: str) -> list[Token]:
    """Split template source into tokens, ending with EOF or ERROR."""
    toks: list[Token] = []
    emit = toks.append
    n = len(src)
    pos = 0
    while True:
        # Text up to the next action.
        x = src.find(LEFT_DELIM, pos)
        if x < 0:
            if pos < n:
                emit(Token(TEXT, src[pos:], pos))
            emit(Token(EOF, "", n))
            return toks
        end = x
        if _has_left_trim(src, x + 2):
            while end > pos and src[end - 1] in SPACE_CHARS:
                end -= 1
        if end > pos:
            emit(Token(TEXT, src[pos:end], pos))
        pos = x + 2
        after = 2 if _has_left_trim(src, pos) else 0
        if src.startswith(LEFT_COMMENT, pos + after):
            pos = _skip_comment(src, pos + after, emit)
        else:
            emit(Token(LDELIM, LEFT_DELIM, x))
            pos = _lex_action(src, pos + after, emit)
        if pos < 0:
            return toks


def _at_terminator(src: str, i: int) -> bool:
    if i >= len(src):
        return True
    c = src[i]
    if c in SPACE_CHARS or c in ".,|:)(":
        return True
    return src.startswith(RIGHT_DELIM, i)


def _skip_comment(src: str, comment_start: int, emit: Callable[[Token], None]) -> int:
    """Past a comment action starting at ``comment_start`` (its ``/*``) and its right delimiter;
    -1 after emitting the error when it is not closed."""
    pos = src.find(RIGHT_COMMENT, comment_start + 2)
    if pos < 0:
        emit(Token(ERROR, "unclosed comment", comment_start))
        return -1
    pos += 2
    delim, trim = _at_right_delim(src, pos)
    if not delim:
        emit(Token(ERROR, "comment ends before closing delimiter", comment_start))
        return -1
    pos += (2 if trim else 0) + 2
    if trim:
        pos += _left_trim_len(src, pos)
    return pos


def _lex_action(src: str, pos: int, emit: Callable[[Token], None]) -> int:
    """The tokens of one action from ``pos`` (after its left delimiter) through its right
    delimiter; returns the position after it, or -1 after emitting an ERROR token."""
    n = len(src)
    paren = 0
    while True:
        delim, trim = _at_right_delim(src, pos)
        if delim:
            if paren != 0:
                emit(Token(ERROR, "unclosed left paren", pos))
                return -1
            if trim:
                pos += 2
            emit(Token(RDELIM, RIGHT_DELIM, pos))
            pos += 2
            if trim:
                pos += _left_trim_len(src, pos)
            return pos
        if pos >= n:
            emit(Token(ERROR, "unclosed action", pos))
            return -1
        start = pos
        c = src[pos]
        if c in SPACE_CHARS:
            j = pos
            while j < n and src[j] in SPACE_CHARS:
                j += 1
            # A space belonging to a trim-marked right delimiter is not ours.
            if _has_right_trim(src, j - 1) and src.startswith(RIGHT_DELIM, j + 1):
                j -= 1
                if j == pos:
                    continue
            emit(Token(SPACE, src[pos:j], pos))
            pos = j
            continue
        pos += 1
        if c == "=":
            emit(Token(ASSIGN, "=", start))
        elif c == ":":
            if pos < n and src[pos] == "=":
                pos += 1
                emit(Token(DECLARE, ":=", start))
            else:
                emit(Token(ERROR, "expected :=", start))
                return -1
        elif c == "|":
            emit(Token(PIPE, "|", start))
        elif c == '"' or c == "'" or c == "`":
            pos = _lex_quote(src, start, emit)
        elif c == "$" or (c == "." and pos < n and not "0" <= src[pos] <= "9"):
            pos = _lex_variable_or_field(src, start, emit)
        elif c in "+-." or "0" <= c <= "9":
            pos = _lex_number(src, start, emit)
        elif _is_alnum(c):
            pos = _lex_word(src, start, emit)
        elif c == "(":
            paren += 1
            emit(Token(LPAREN, c, start))
        elif c == ")":
            paren -= 1
            if paren < 0:
                emit(Token(ERROR, "unexpected right paren", start))
                return -1
            emit(Token(RPAREN, c, start))
        elif c.isascii() and c.isprintable():
            emit(Token(CHAR, c, start))
        else:
            emit(Token(ERROR, f"unrecognized character in action: {_go_char_desc(c)}", start))
            return -1
        if pos < 0:
            return -1


# The lexers of the tokens of more than one character in an action: each takes the source,
# where the token starts and ``emit``, and returns the position after it, or -1 after emitting
# an ERROR token.


def _lex_quote(src: str, start: int, emit: Callable[[Token], None]) -> int:
    """A quoted string, a character constant or a raw (back-quoted) string."""
    c = src[start]
    if c == "`":
        y = src.find("`", start + 1)
        if y < 0:
            emit(Token(ERROR, "unterminated raw quoted string", start))
            return -1
        emit(Token(RAWSTRING, src[start : y + 1], start))
        return y + 1
    kind, unterminated = (
        (STRING, "unterminated quoted string") if c == '"' else (CHARCONST, "unterminated character constant")
    )
    pos = _end_of_quoted(src, start + 1, c)
    if pos < 0:
        emit(Token(ERROR, unterminated, start))
        return -1
    emit(Token(kind, src[start:pos], start))
    return pos


def _lex_variable_or_field(src: str, start: int, emit: Callable[[Token], None]) -> int:
    """``$`` or ``$name`` (a VARIABLE), ``.`` (DOT) or ``.Name`` (a FIELD)."""
    n = len(src)
    c = src[start]
    pos = start + 1
    if _at_terminator(src, pos):
        emit(Token(VARIABLE if c == "$" else DOT, c, start))
        return pos
    while pos < n and _is_alnum(src[pos]):
        pos += 1
    if not _at_terminator(src, pos):
        emit(Token(ERROR, f"bad character {_go_char_desc(src[pos])}", pos))
        return -1
    emit(Token(VARIABLE if c == "$" else FIELD, src[start:pos], start))
    return pos


def _lex_word(src: str, start: int, emit: Callable[[Token], None]) -> int:
    """A keyword, ``true``/``false`` or an identifier (a function's name)."""
    n = len(src)
    pos = start + 1
    while pos < n and _is_alnum(src[pos]):
        pos += 1
    word = src[start:pos]
    if not _at_terminator(src, pos):
        emit(Token(ERROR, f"bad character {_go_char_desc(src[pos])}", pos))
        return -1
    kw = KEYWORDS.get(word)
    if kw is not None:
        emit(Token(kw, word, start))
    elif word in ("true", "false"):
        emit(Token(BOOL, word, start))
    else:
        emit(Token(IDENT, word, start))
    return pos


def _end_of_quoted(src: str, pos: int, quote: str) -> int:
    """The position after the closing ``quote`` of a string or character constant whose body
    starts at ``pos``; -1 when a newline or the end comes first."""
    n = len(src)
    while True:
        if pos >= n or src[pos] == "\n":
            return -1
        ch = src[pos]
        pos += 1
        if ch == "\\":
            if pos >= n or src[pos] == "\n":
                return -1
            pos += 1
        elif ch == quote:
            return pos


def _lex_number(src: str, start: int, emit: Callable[[Token], None]) -> int:
    """A NUMBER (or a COMPLEX such as 1+2i) from ``start``; -1 after emitting a syntax error."""
    n = len(src)
    pos = _scan_number(src, start)
    if pos < 0:
        end_bad = -pos
        emit(Token(ERROR, f"bad number syntax: {go_quote(src[start:end_bad])}", start))
        return -1
    kind = NUMBER
    if pos < n and src[pos] in "+-":
        # Complex constant 1+2i: no spaces, must end in 'i'.
        p2 = _scan_number(src, pos)
        end2 = -p2 if p2 < 0 else p2
        if p2 < 0 or src[end2 - 1] != "i":
            emit(Token(ERROR, f"bad number syntax: {go_quote(src[start:end2])}", start))
            return -1
        pos, kind = p2, COMPLEX
    emit(Token(kind, src[start:pos], start))
    return pos


def _scan_number(src: str, i: int) -> int:
    """Go's scanNumber: returns the end offset, or -(end) for bad syntax."""
    n = len(src)

    def accept(chars: str) -> bool:
        nonlocal i
        if i < n and src[i] in chars:
            i += 1
            return True
        return False

    def accept_run(chars: str) -> None:
        nonlocal i
        while i < n and src[i] in chars:
            i += 1

    accept("+-")
    digits = "0123456789_"
    if accept("0"):
        if accept("xX"):
            digits = "0123456789abcdefABCDEF_"
        elif accept("oO"):
            digits = "01234567_"
        elif accept("bB"):
            digits = "01_"
    accept_run(digits)
    if accept("."):
        accept_run(digits)
    if len(digits) == 11 and accept("eE"):
        accept("+-")
        accept_run("0123456789_")
    if len(digits) == 23 and accept("pP"):
        accept("+-")
        accept_run("0123456789_")
    accept("i")
    if i < n and _is_alnum(src[i]):
        return -(i + 1)
    return i
