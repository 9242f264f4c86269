"""Plain text from code comments and docs: markup stripped, sentences cut, words counted.

Doxygen/Javadoc comments carry markup (`/** ... */`, `///`, `\\brief`, `@class X`, `@param`)
that a reader should not have to skip; these helpers turn them into sentences.
"""
from __future__ import annotations

import re
from functools import lru_cache

_DELIMS = re.compile(r"^\s*(?:/\*+!?|\*+/|\*(?!\S*\*/)|//+[!/<]?|#+'?|--|!>|!<)\s?", re.M)
_CLOSE = re.compile(r"\s*\*+/\s*$", re.M)
# Tags that only label what follows (or name the documented thing again): drop them.
_LABEL_TAGS = re.compile(
    r"[\\@](?:brief|short|details?|detail|summary|remarks?|note|par|ingroup|addtogroup|"
    r"defgroup|weakgroup|internal|endinternal|callgraph|callergraph|nosubgrouping|"
    r"headerfile|inherit|copydoc|copybrief|copydetails)\b[ \t]*")
_NAMED_TAGS = re.compile(r"[\\@](?:class|struct|union|enum|namespace|file|fn|var|typedef|def|"
                         r"interface|page|section|subsection|module|concept|property)\b[ \t]*"
                         r"[^\s]*[ \t]*")
_PARAM = re.compile(r"[\\@](?:t?param)(?:\[[^\]]*\])?[ \t]+(\w+)[ \t]*")
_RETURN = re.compile(r"[\\@](?:returns?|retval)\b[ \t]*")
_OTHER_TAG = re.compile(r"[\\@](?:see|sa|todo|warning|attention|deprecated|since|author|"
                        r"version|date|throws?|exception|pre|post|invariant|bug|example|code|"
                        r"endcode|verbatim|endverbatim)\b[ \t]*")
_INLINE = re.compile(r"[\\@](?:[apbce]|em|ref|link|endlink)\b[ \t]+")
_FORMULA = re.compile(r"\\f[$\[\]{}()]")
_SENTENCE = re.compile(r"(.+?(?<![\s(]\d)(?<!\be\.g)(?<!\bi\.e)[.!?])(\s|$)", re.S)
_SEPARATOR = re.compile(r"^[\s=*/#\-_~+]{3,}$", re.M)


@lru_cache(maxsize=50000)  # the same comments are shown query after query
def strip_markup(text: str) -> str:
    """Comment text without delimiters and Doxygen/Javadoc tags, whitespace folded."""
    if not text:
        return ""
    t = _CLOSE.sub("", text)
    t = _DELIMS.sub("", t)
    t = _SEPARATOR.sub("", t)
    t = _NAMED_TAGS.sub("", t)
    t = _LABEL_TAGS.sub("", t)
    t = _PARAM.sub(lambda m: f"\x00{m.group(1)}: ", t)
    t = _RETURN.sub("\x00returns ", t)
    t = _OTHER_TAG.sub("", t)
    t = _INLINE.sub("", t)
    t = _FORMULA.sub("", t)
    t = " ".join(t.split())
    t = re.sub(r"([.!?:;])\s*\x00", r"\1 ", t)
    return re.sub(r"\s*\x00", "; ", t).strip("; ")


def first_sentences(text: str, limit: int = 220, sentences: int = 1) -> str:
    """The first sentence(s) of text, cut at a word boundary near `limit` characters."""
    text = " ".join(text.split())
    out, rest = [], text
    while rest and len(out) < sentences:
        m = _SENTENCE.match(rest)
        s = m.group(1) if m else rest
        out.append(s)
        rest = rest[len(s):].lstrip()
    s = " ".join(out)
    return s if len(s) <= limit else s[:limit].rsplit(" ", 1)[0] + " …"
