"""lexer.py — the Pygments lexer of cudalab's cell language, for whatever highlights cells outside the
browser's editor: nbconvert's HTML and LaTeX (it reads the notebook's language_info.pygments_lexer, which
the kernel sets to "cudalab"), the qtconsole, Sphinx, `pygmentize -l cudalab`.

Registered as the `pygments.lexers` entry point `cudalab` (pyproject.toml). Its name, mimetype and
file extension are the kernel's language_info (kernel/shell/info.c); tests/frontends checks they agree.

The lexer is generic on purpose: any `%name` is a magic, any `--name` a flag, so a new magic or flag
needs no change here. What it does know is the language's shape, as the kernel parses it
(kernel/lang/parse*.c, subst.c):

    %name args           a magic line: flags, numbers (1024, 2^20, 64K, 1e6, 16x16), quoted strings,
                         comma lists, {NAME} / $NAME parameters; '#' at a token's start is a comment
    %assert / %score     an expression (kernel/grade/expr_parse.c): operators, names, calls, literals
    %%name args + body   a cell magic; %%kernel's body is CUDA C++ (Pygments' CudaLexer), any other
                         body (%%histo's letters, %%echo's text) is text
    %name?  ?name        help
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, include
from pygments.lexers.c_like import CudaLexer
from pygments.lexers.special import TextLexer
from pygments.token import (Comment, Error, Keyword, Name, Number, Operator, Punctuation, String, Text,
                            Whitespace)

__all__ = ["CudalabLexer"]

# The magics whose text is an %assert/%score expression rather than arguments (the kernel's raw magics).
EXPRESSION_MAGICS = ("assert", "score")
# The cell magic whose body is CUDA C++; every other cell magic's body is text.
CUDA_BODY_MAGICS = ("kernel",)

NAME = r"[A-Za-z_]\w*"
# 1024, 1_000, 2^20, 64K, 1.5Mi, 1e6, -5 (kernel/lang/parse_number.c), whole words only
NUMBER_END = r"(?=[\s,x=\])]|$)"
# unsigned: in an expression a sign is an operator (n-1.5); an argument's sign is part of its number
UNSIGNED_INTEGER = r"\d[\d_]*(?:[eE]\+?\d+)?(?:\^\d+)?(?:[KMGTP]i?|[kmgtp])?"
UNSIGNED_FLOAT = r"(?:\d[\d_]*)?\.\d+(?:[eE][+-]?\d+)?(?:[KMGTP]i?)?|\d[\d_]*[eE]-\d+"
INTEGER = r"[+-]?(?:" + UNSIGNED_INTEGER + ")"
FLOAT = r"[+-]?(?:" + UNSIGNED_FLOAT + ")"


class CudalabLexer(RegexLexer):
    """cudalab's cell language: magic lines, %assert/%score expressions, and %%kernel bodies as CUDA C++."""

    name = "cudalab"
    aliases = ["cudalab"]
    filenames = ["*.cudalab"]
    mimetypes = ["text/x-cudalab"]

    tokens = {
        "root": [
            (r"[ \t]*\n", Whitespace),
            (r"([ \t]*)(#.*)", bygroups(Whitespace, Comment.Single)),
            (r"([ \t]*)%%([\w-]*)[\s\S]*", lambda lexer, match: lexer.cell_magic(match)),
            (r"([ \t]*)(%)(" + "|".join(EXPRESSION_MAGICS) + r")\b", bygroups(Whitespace, Operator, Keyword),
             "expr"),
            (r"([ \t]*)(%)([\w-]*)(\?*)", bygroups(Whitespace, Operator, Keyword, Operator), "args"),
            (r"([ \t]*)(\?+)(%{0,2})([\w-]*)", bygroups(Whitespace, Operator, Operator, Keyword), "args"),
            (r"[^\n]+", Error),         # not a magic line: the kernel refuses it, so say so
        ],
        # what every argument can hold: parameters, and their literal forms
        "params": [
            (r"\$\$|\{\{|\}\}", String.Escape),
            (r"\{" + NAME + r"\}|\$" + NAME, Name.Variable),
        ],
        "line_end": [
            (r"\\\n", String.Escape),   # a continuation: the command goes on
            (r"\n", Whitespace, "#pop"),
            (r"[ \t]+", Whitespace),
        ],
        "args": [
            include("line_end"),
            (r"(?<=\s)#.*", Comment.Single),
            (r"(?<=\s)--(?=\s|$)", Punctuation),
            (r"(?<=\s)--?[A-Za-z][\w-]*", Name.Attribute),
            (r"'[^']*'?", String.Single),           # an open quote runs on, as in the kernel
            (r'"', String.Double, "dstring"),
            include("params"),
            ("(" + FLOAT + ")" + NUMBER_END, Number.Float),
            ("(" + INTEGER + ")" + NUMBER_END, Number.Integer),
            (r"(?<=\d)x(?=\d)", Operator),          # dims: 16x16
            (r"[,=]", Punctuation),
            (r"[^\s'\",=${}\\]+", Text),
            (r"[${}\\]", Text),
        ],
        # double quotes: the cell language's escapes, and parameters put in
        "dstring": [
            (r'\\(?:[\\\'"ntr\n]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})', String.Escape),
            (r"\$\$|\{\{|\}\}", String.Escape),
            (r"\{" + NAME + r"\}|\$" + NAME, String.Interpol),
            (r'"', String.Double, "#pop"),
            (r'[^"\\${}]+', String.Double),
            (r"[\\${}]", String.Double),
        ],
        "sstring_expr": [
            (r"\\.", String.Escape),
            (r"'", String.Single, "#pop"),
            (r"[^'\\]+", String.Single),
        ],
        "expr": [
            include("line_end"),
            (r"#.*", Comment.Single),
            (r"'", String.Single, "sstring_expr"),
            (r'"', String.Double, "dstring"),
            include("params"),
            ("(" + UNSIGNED_FLOAT + r")(?![\w.])", Number.Float),
            ("(" + UNSIGNED_INTEGER + r")(?![\w.])", Number.Integer),
            (r"(and|or|not)\b", Operator.Word),
            (r"(true|false|null)\b", Keyword.Constant),
            (NAME + r"(?=\s*\()", Name.Function),
            (r"(\.)(" + NAME + ")", bygroups(Punctuation, Name.Attribute)),
            (NAME, Name),
            (r"==|!=|<=|>=|&&|\|\||[<>+\-*/%!=]", Operator),
            (r"[\[\](),]", Punctuation),
            (r".", Error),
        ],
    }

    def cell_magic(self, match):
        """A cell magic, from its line to the cell's end: its first line is arguments, its body another
        language, which a state machine of regexes cannot hand over to (hence a callback)."""
        text, start = match.string, match.start()
        at = start + len(match.group(1))
        if at > start:
            yield start, Whitespace, match.group(1)
        name_end = at + 2 + len(match.group(2))
        yield at, Operator, "%%"
        yield at + 2, Keyword, match.group(2)
        header_end = _logical_line_end(text, name_end)
        for index, token, value in RegexLexer.get_tokens_unprocessed(self, text[name_end:header_end],
                                                                     ("root", "args")):
            yield name_end + index, token, value
        body = text[header_end:match.end()]
        lexer = CudaLexer(**self.options) if match.group(2) in CUDA_BODY_MAGICS else TextLexer(**self.options)
        for index, token, value in lexer.get_tokens_unprocessed(body) if body else ():
            yield header_end + index, token, value


def _logical_line_end(text: str, pos: int) -> int:
    """Where the line at pos ends, past its newline, continuation backslashes included."""
    while True:
        nl = text.find("\n", pos)
        if nl < 0:
            return len(text)
        if nl > 0 and text[nl - 1] == "\\":
            pos = nl + 1
            continue
        return nl + 1
