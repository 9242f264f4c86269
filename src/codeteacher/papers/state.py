"""What linking needs to know about every paper, prepared once per library change.

Linking touches every paper only through aggregates (term IDF, identifier and author-year
lookups for citations); the records themselves are read only for the few candidates an entity
has. So the per-paper work (term extraction, identifier normalisation) is done when the library
changes and stored in the library as one JSON document (table `derived`, tagged with the
library's generation, which every change bumps); a link call reads that document and nothing
else per paper.
"""
from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections import Counter
from dataclasses import asdict, dataclass, field

from . import identity
from . import terms as T
from .model import PaperRecord

STATE_VERSION = 1
DERIVED_TABLE = ("CREATE TABLE IF NOT EXISTS derived(name TEXT PRIMARY KEY, generation INTEGER "
                 "NOT NULL, value TEXT NOT NULL)")


@dataclass
class LibraryState:
    keys: list[str] = field(default_factory=list)  # the library's key order (row i of vectors)
    terms: list[list[str]] = field(default_factory=list)  # per paper: title + keyword terms
    phrases: list[list[tuple[str, list[str]]]] = field(default_factory=list)  # keyword -> terms
    idf: dict[str, float] = field(default_factory=dict)
    mean_idf: float = 1.0
    max_idf: float = 1.0
    max_log_cites: float = 0.0
    ids: dict[str, str] = field(default_factory=dict)  # "scheme:value" -> key
    author_year: dict[str, list[str]] = field(default_factory=dict)  # "surname|year" -> keys
    urls: dict[str, str] = field(default_factory=dict)
    titles: dict[str, list[str]] = field(default_factory=dict)  # normalised title -> keys
    generation: int = -1

    @classmethod
    def compute(cls, papers: list[PaperRecord], generation: int = -1) -> "LibraryState":
        st = cls(generation=generation)
        st.keys = [p.key for p in papers]
        for p in papers:
            st.terms.append(sorted(T.paper_terms(p.title, p.keywords)))
            st.phrases.append([(k, sorted(ws)) for k, ws in T.keyword_phrases(p.keywords)])
            for ident in p.id_keys():
                st.ids.setdefault(ident, p.key)
            if p.authors and p.year:
                st.author_year.setdefault(f"{identity.surname(p.authors[0])}|{p.year}",
                                          []).append(p.key)
            if u := identity.normalize_url(p.url):
                st.urls.setdefault(u, p.key)
            if nt := identity.normalize_title(p.title):
                st.titles.setdefault(nt, []).append(p.key)
        df = Counter(t for ts in st.terms for t in ts)
        n = max(len(papers), 1)
        st.idf = {t: math.log((n + 1) / (d + 0.5)) for t, d in df.items()}
        st.mean_idf = sum(st.idf.values()) / len(st.idf) if st.idf else 1.0
        st.max_idf = max(st.idf.values(), default=1.0)
        counts = [p.citation_count for p in papers if p.citation_count]
        st.max_log_cites = math.log1p(max(counts)) if counts else 0.0
        return st

    def digest(self) -> str:
        return hashlib.sha1("\0".join(self.keys).encode("utf-8", "replace")).hexdigest()[:16]


def generation(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE name = 'generation'").fetchone()
    return int(row[0]) if row else 0


def bump_generation(conn: sqlite3.Connection) -> None:
    """Called inside every transaction that changes records: derived data becomes stale."""
    conn.execute("INSERT INTO meta VALUES ('generation', ?) ON CONFLICT(name) DO UPDATE "
                 "SET value = excluded.value", (str(generation(conn) + 1),))


def load_state(conn: sqlite3.Connection) -> LibraryState | None:
    """The stored state if it belongs to the library's current generation."""
    try:
        row = conn.execute("SELECT generation, value FROM derived WHERE name = 'link_state'"
                           ).fetchone()
    except sqlite3.OperationalError:  # never written
        return None
    if not row or row[0] != generation(conn):
        return None
    data = json.loads(row[1])
    if data.pop("version", None) != STATE_VERSION:
        return None
    return LibraryState(**data)


def store_state(conn: sqlite3.Connection, st: LibraryState) -> None:
    with conn:
        conn.execute(DERIVED_TABLE)
        conn.execute("INSERT OR REPLACE INTO derived VALUES ('link_state', ?, ?)",
                     (st.generation, json.dumps({"version": STATE_VERSION, **asdict(st)},
                                                ensure_ascii=False)))


def vectors_current(conn: sqlite3.Connection, model: str) -> bool:
    """Whether the stored vectors of `model` were refreshed at the current generation."""
    try:
        row = conn.execute("SELECT generation FROM derived WHERE name = ?",
                           (f"vectors:{model}",)).fetchone()
    except sqlite3.OperationalError:
        return False
    return bool(row) and row[0] == generation(conn)


def mark_vectors(conn: sqlite3.Connection, model: str) -> None:
    with conn:
        conn.execute(DERIVED_TABLE)
        conn.execute("INSERT OR REPLACE INTO derived VALUES (?, ?, '')",
                     (f"vectors:{model}", generation(conn)))
