"""papermill.py — papermill's translator for cudalab notebooks: `papermill -p size 2048 in.ipynb out.ipynb`
injects a cell of `%param NAME VALUE` lines after the cell tagged "parameters" (which holds the notebook's
own `%param` defaults), and the magic lines below read them as {NAME} or $NAME (kernel/lang/subst.c).

How a value is written, so that the kernel reads back exactly the value papermill was given:
  str          'as is' in single quotes; in double quotes with the cell language's escapes when it holds
               a single quote or a control character (and $$ {{ }} for $ { }, which double quotes expand)
  int, float   the number (2048, 0.5, 1e-05), as a flag reads it
  bool         true / false, as a switch reads it
  list         a comma list (8,16,32), as a flag with several values reads it; no item may hold a comma
  None         not written: a comment says so, and the parameters cell's value stays
  dict         an error: the cell language has no such value
Names follow the kernel's rule (letters, digits and _, not starting with a digit).

papermill looks translators up by the notebook's kernel name or language ("cudalab") in its registry,
which it fills itself: it has no entry-point group for translators. It does import every
`papermill.engine` entry point when it starts, so the entry point of `CudalabEngine` (papermill_engine.py,
pyproject.toml) is what brings this module in and registers the translator.
"""
from __future__ import annotations

import math
import re

from papermill.models import Parameter
from papermill.translators import Translator, papermill_translators

__all__ = ["CudalabTranslator"]

LANGUAGE = "cudalab"        # the kernelspec's language and kernel name (share/jupyter/kernelspecs/cudalab)
NAME_RULE = r"[A-Za-z_]\w*"     # the kernel's (kernel/lang/params.c), ASCII only
NAME = re.compile(NAME_RULE + r"\Z", re.ASCII)
NAME_MAX = 64               # PARAM_NAME_MAX in kernel/lang/params.h (tests/frontends/test_papermill.py)
PARAM_LINE = re.compile(r"^\s*%param\s+(?P<name>" + NAME_RULE + r")\s+(?P<value>(?:'[^']*'|\"(?:[^\"\\]|\\.)*\"|[^\s#])+)"
                        r"\s*(?:#\s*(?P<help>.*))?$", re.ASCII)
DOUBLE_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r",
                  "$": "$$", "{": "{{", "}": "}}"}


class CudalabTranslator(Translator):
    """Parameters as %param lines of cudalab's cell language."""

    @classmethod
    def translate_str(cls, val: str) -> str:
        if "\0" in val:
            raise ValueError("a cudalab parameter cannot hold a NUL character (values are C strings)")
        if "'" not in val and all(c >= " " and c != "\x7f" for c in val):
            return f"'{val}'"
        out = []
        for c in val:
            if c in DOUBLE_ESCAPES:
                out.append(DOUBLE_ESCAPES[c])
            elif c < " " or c == "\x7f":
                out.append(f"\\x{ord(c):02x}")
            else:
                out.append(c)
        return '"' + "".join(out) + '"'

    @classmethod
    def translate_bool(cls, val: bool) -> str:
        return "true" if val else "false"

    @classmethod
    def translate_float(cls, val: float) -> str:
        # nan and inf go as text (quoted, or -inf would read as a flag): the flag that reads them refuses
        # them by name, as it would refuse them typed
        return repr(val) if math.isfinite(val) else cls.translate_str(repr(val))

    @classmethod
    def translate_escaped_str(cls, val) -> str:
        return cls.translate_str(str(val))      # papermill's last resort for other types: their text

    @classmethod
    def translate_none(cls, val) -> str:
        raise AssertionError("codify writes no line for None")

    @classmethod
    def translate_dict(cls, val: dict) -> str:
        raise ValueError("a cudalab parameter is text, a number, true/false or a list: a dict has no form in "
                         "the cell language")

    @classmethod
    def translate_list(cls, val: list) -> str:
        if not val:
            raise ValueError("an empty list is no value for a cudalab parameter (a flag needs at least one)")
        items = []
        for v in val:
            if isinstance(v, (list, dict)) or v is None:
                raise ValueError(f"a cudalab list holds numbers, text or true/false, not {v!r}")
            item = cls.translate_bool(v) if isinstance(v, bool) else str(v)
            if "," in item:
                raise ValueError(f"the list item {item!r} holds a comma, which separates a cudalab list's items")
            items.append(item)
        joined = ",".join(items)
        if re.fullmatch(r"[^\s'\"\\#$}{-][^\s'\"\\${}]*", joined):
            return joined
        return cls.translate_str(joined)

    @classmethod
    def translate_int(cls, val: int) -> str:
        return str(val)

    @classmethod
    def comment(cls, cmt_str: str) -> str:
        return "\n".join(f"# {line}".rstrip() for line in str(cmt_str).splitlines() or [""])

    @classmethod
    def assign(cls, name: str, str_val: str) -> str:
        if not NAME.match(name) or len(name) > NAME_MAX:
            raise ValueError(f"{name!r} is not a cudalab parameter name: letters, digits and _, not starting "
                             f"with a digit, at most {NAME_MAX} characters")
        return f"%param {name} {str_val}"

    @classmethod
    def codify(cls, parameters: dict, comment: str = "Parameters") -> str:
        lines = [cls.comment(comment)]
        for name, val in parameters.items():
            if val is None:
                lines.append(cls.comment(f"{name}: None, not set (the parameters cell's value stays)"))
            else:
                lines.append(cls.assign(name, cls.translate(val)))
        return "\n".join(lines) + "\n"

    @classmethod
    def inspect(cls, parameters_cell) -> list[Parameter]:
        """The parameters cell's %param lines (`papermill --help-notebook`): name, a type guessed from the
        value's text, the value, and a trailing comment as help."""
        found = []
        for line in parameters_cell.source.splitlines():
            m = PARAM_LINE.match(line)
            if m:
                value = m.group("value")
                found.append(Parameter(name=m.group("name"), inferred_type_name=_kind(value), default=value,
                                       help=m.group("help") or ""))
        return found


def _kind(value: str) -> str:
    if value in ("true", "false"):
        return "bool"
    if re.fullmatch(r"-?\d[\d_]*(\^\d+)?([KMGT]i?)?|-?\d+e\+?\d+", value):
        return "int"
    if re.fullmatch(r"-?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", value):
        return "float"
    if "," in value and not value.startswith(("'", '"')):
        return "list"
    return "str"


papermill_translators.register(LANGUAGE, CudalabTranslator)
