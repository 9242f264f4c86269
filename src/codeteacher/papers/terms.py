"""Generic concept extraction: identifier parts, comment words, light stems (the splitter and
the stemmer are the index's own, index/lexical.py, so code and papers meet on the same terms).

Nothing here knows any domain: the stop lists are English function words and C/C++ language
and generic programming vocabulary, which carry no information about which paper applies.
"""
from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from ..index.lexical import split_identifier, stem
from . import identity

_ENGLISH = """a about above after again against all also an and any are as at be because been
before being below between both but by can could did do does doing done down during each either
else etc every few for from further given had has have having here how however i if in into is
it its itself just may might more most much must need no nor not now of off on once one only or
other otherwise our out over own per same see should since so some such than that the their them
then there these they this those through thus to too two under until up upon us use used uses
using very via was we were what when where whether which while who whose why will with within
without would yet you your first second third new old e g ie eg note todo fixme xxx""".split()
_CODE = """auto bool break case catch char class const constexpr continue default define delete
do double else endif enum explicit extern false float for friend goto if ifdef ifndef include
inline int long mutable namespace noexcept nullptr operator override private protected public
register return short signed sizeof static struct switch template this throw true try typedef
typename union unsigned using virtual void volatile while std size t type types value values
get set make init initialize initialise impl detail details tmp temp data ptr ref arg args
param params brief return returns tparam function functions method class object objects member
members variable variables file files line lines run test tests check assert print cout endl
string vector array map list begin end size_t uint int32 int64 view views
lambda helper utility utils util base derived default copy move
swap index idx num count number result results output input src dst lhs rhs left right buffer
host device exec space spaces memory policy range loop loops functor""".split()
STOP = frozenset(_ENGLISH) | frozenset(_CODE)

_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
_LINE_COMMENT = re.compile(r"//+!?<?(.*)$", re.M)
_BLOCK_COMMENT = re.compile(r"/\*+!?<?(.*?)\*/", re.S)


@lru_cache(maxsize=1 << 16)  # the same identifiers recur all over a codebase
def _parts(name: str) -> tuple[str, ...]:
    """Identifier parts (index/lexical's splitter), numbers dropped: they name no concept."""
    return tuple(p for p in split_identifier(name) if not p.isdigit())


def words(text: str) -> list[str]:
    """Folded, stemmed content words of prose (hyphenated words also yield their parts)."""
    out = []
    for w in _WORD.findall(identity.fold(text)):
        w = re.sub(r"'s$", "", w)
        parts = [w] + (re.split(r"[-']", w) if "-" in w or "'" in w else [])
        for p in parts:
            if len(p) > 1 and p not in STOP and not p.isdigit():
                out.append(stem(p))
    return out


def code_words(code: str) -> list[str]:
    """Identifier parts of code (camelCase/snake_case split) plus its comment words."""
    comments = " ".join(_LINE_COMMENT.findall(code) + _BLOCK_COMMENT.findall(code))
    out = words(comments)
    for ident in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _BLOCK_COMMENT.sub(" ", _LINE_COMMENT.sub(" ", code))):
        for p in _parts(ident):
            if len(p) > 1 and p not in STOP:
                out.append(stem(p))
    return out


def entity_terms(name: str, comment: str, explanation: str, code: str, prose: bool,
                 context: str = "") -> Counter:
    """Term counts of an entity: names and comments weigh more than body identifiers, since
    the comment states intent and the body repeats generic variable names. `context` is the
    qualified name and file path: a method inherits the vocabulary of its class and file."""
    c: Counter = Counter()
    for w in _parts(name):
        if len(w) > 1 and w not in STOP:
            c[stem(w)] += 3
    for w in _parts(context):
        if len(w) > 1 and w not in STOP:
            c[stem(w)] += 1
    for w in words(comment) + words(explanation):
        c[w] += 2
    for w in (words(code) if prose else code_words(code)):
        c[w] += 1
    return c


def paper_terms(title: str, keywords: list[str]) -> set[str]:
    return set(words(title)) | {w for k in keywords for w in words(k)}


def keyword_phrases(keywords: list[str]) -> list[tuple[str, set[str]]]:
    """Each keyword with its term set, for 'matching keywords' reasons."""
    return [(k, set(words(k))) for k in keywords if words(k)]
