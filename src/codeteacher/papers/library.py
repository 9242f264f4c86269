"""The paper library: one SQLite file (records + identifier index + FTS5), and a JSONL snapshot.

Records are stored as JSON (the PaperRecord model) with side tables for lookups: `ids` maps every
"scheme:value" identifier and `aliases` every merged key to the record key, `papers_fts` is the
full-text index. A file that is not SQLite or lacks this schema is refused before anything is
written, and every change happens inside one transaction.
"""
from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from ..contracts.errors import UserError
from ..contracts.jsonio import atomic_path, write_text
from . import identity
from .model import PaperRecord, is_same_work, merge_records
from .state import bump_generation

FORMAT = "codeteacher-papers"
SCHEMA_VERSION = 1
_SQLITE_MAGIC = b"SQLite format 3\x00"
_TABLES = {"meta", "papers", "ids", "aliases", "papers_fts"}  # paper_vectors: see vectors.py
_SCHEMA = """
CREATE TABLE meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE papers(key TEXT PRIMARY KEY, ntitle TEXT NOT NULL, year INTEGER, data TEXT NOT NULL);
CREATE INDEX papers_ntitle ON papers(ntitle);
CREATE TABLE ids(id TEXT PRIMARY KEY, key TEXT NOT NULL);
CREATE TABLE aliases(alias TEXT PRIMARY KEY, key TEXT NOT NULL);
CREATE VIRTUAL TABLE papers_fts USING fts5(
    key UNINDEXED, title, authors, keywords, abstract, venue,
    tokenize = 'porter unicode61 remove_diacritics 2');
"""
# BM25 column weights: key, title, authors, keywords, abstract, venue
_BM25 = "bm25(papers_fts, 0.0, 4.0, 1.5, 3.0, 1.0, 0.5)"
_STOP = frozenset("""a an and are as at be by for from in into is it of on or the to with via its
this that these those using use used we our not no""".split())


@dataclass
class ImportReport:
    added: list[str] = field(default_factory=list)
    merged: list[tuple[str, str]] = field(default_factory=list)  # (incoming key, into key)
    unchanged: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # "file:line: message"
    embedded: int = 0  # records whose vectors were computed by this import

    def as_dict(self) -> dict:
        return {"added": len(self.added), "merged": len(self.merged),
                "unchanged": len(self.unchanged), "embedded": self.embedded,
                "problems": self.problems}


def snapshot_path(path: Path) -> Path:
    return path.with_suffix(".jsonl")


def fts_query(text: str, max_terms: int = 32) -> str:
    """Free text -> an FTS5 OR-query of quoted terms (no FTS syntax from user text survives)."""
    terms = [t for t in re.findall(r"[^\W_]+", identity.fold(text)) if len(t) > 1 and t not in _STOP]
    terms = list(dict.fromkeys(terms))[:max_terms]
    return " OR ".join(f'"{t}"' for t in terms)


class Library:
    """An open paper library. Use `Library.open(path, create=...)`; close() or `with`."""

    def __init__(self, path: Path, conn: sqlite3.Connection, snapshot: bool = True):
        self.path = path
        self.conn = conn
        self.snapshot = snapshot

    # ---- opening ----------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, *, create: bool = False, snapshot: bool = True) -> "Library":
        path = Path(path)
        if not path.exists():
            if not create:
                raise UserError(f"no paper library at {path} (create one with "
                                "'codeteacher papers import FILE')")
            cls._create(path)
        cls._check_file(path)
        conn = sqlite3.connect(path)
        try:
            cls._check_schema(conn, path)
        except BaseException:
            conn.close()
            raise
        return cls(path, conn, snapshot)

    @staticmethod
    def _create(path: Path) -> None:
        """Build the empty schema in a temp file and rename it into place (never half a file)."""
        with atomic_path(path) as tmp:
            conn = sqlite3.connect(tmp)
            with conn:
                conn.executescript(_SCHEMA)
                conn.executemany("INSERT INTO meta VALUES (?, ?)",
                                 [("format", FORMAT), ("schema_version", str(SCHEMA_VERSION))])
            conn.close()

    @staticmethod
    def _check_file(path: Path) -> None:
        if path.is_dir():
            raise UserError(f"{path} is a directory, not a paper library")
        with open(path, "rb") as fh:
            head = fh.read(16)
        if head != _SQLITE_MAGIC:
            raise UserError(f"{path} is not a paper library (not an SQLite database); "
                            "refusing to touch it")

    @staticmethod
    def _check_schema(conn: sqlite3.Connection, path: Path) -> None:
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            meta = dict(conn.execute("SELECT name, value FROM meta")) if "meta" in names else {}
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{path} is not a readable paper library ({exc})") from None
        if not _TABLES <= names or meta.get("format") != FORMAT:
            raise UserError(f"{path} is an SQLite file but not a codeteacher paper library "
                            "(wrong schema); refusing to touch it")
        if meta.get("schema_version") != str(SCHEMA_VERSION):
            raise UserError(f"{path}: paper library schema version {meta.get('schema_version')} "
                            f"is not supported (expected {SCHEMA_VERSION})")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Library":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- reading ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return self.conn.execute("SELECT count(*) FROM papers").fetchone()[0]

    def all(self) -> list[PaperRecord]:
        rows = self.conn.execute("SELECT data FROM papers ORDER BY key")
        return [PaperRecord.model_validate_json(r[0]) for r in rows]

    def _by_key(self, key: str) -> PaperRecord | None:
        row = self.conn.execute("SELECT data FROM papers WHERE key = ?", (key,)).fetchone()
        return PaperRecord.model_validate_json(row[0]) if row else None

    def get(self, ref: str) -> PaperRecord | None:
        """By key, merged alias key, or any identifier form (DOI URL, arXiv id, OpenAlex id)."""
        ref = ref.strip()
        if rec := self._by_key(ref):
            return rec
        row = self.conn.execute("SELECT key FROM aliases WHERE alias = ?", (ref,)).fetchone()
        if row:
            return self._by_key(row[0])
        parsed = identity.parse_identifier(ref)
        if parsed:
            row = self.conn.execute("SELECT key FROM ids WHERE id = ?",
                                    (f"{parsed[0]}:{parsed[1]}",)).fetchone()
            if row:
                return self._by_key(row[0])
        return None

    def find_same(self, rec: PaperRecord) -> PaperRecord | None:
        """The stored record of the same work, by shared identifier, else title + year."""
        for ident in sorted(rec.id_keys()):
            row = self.conn.execute("SELECT key FROM ids WHERE id = ?", (ident,)).fetchone()
            if row:
                return self._by_key(row[0])
        ntitle = identity.normalize_title(rec.title)
        if ntitle:
            for (data,) in self.conn.execute("SELECT data FROM papers WHERE ntitle = ?", (ntitle,)):
                other = PaperRecord.model_validate_json(data)
                if is_same_work(rec, other):
                    return other
        return None

    def search(self, query: str, k: int = 10) -> list[tuple[PaperRecord, float]]:
        """FTS5 BM25 search; scores are positive, larger is better. Identifiers match exactly."""
        hits: list[tuple[PaperRecord, float]] = []
        exact = self.get(query) if identity.parse_identifier(query) else None
        if exact:
            hits.append((exact, float("inf")))
        q = fts_query(query)
        if q:
            rows = self.conn.execute(
                f"SELECT key, {_BM25} AS s FROM papers_fts WHERE papers_fts MATCH ? "
                "ORDER BY s LIMIT ?", (q, k))
            for key, s in rows.fetchall():
                if exact and key == exact.key:
                    continue
                rec = self._by_key(key)
                if rec:
                    hits.append((rec, -float(s)))
        return hits[:k]

    # ---- writing ----------------------------------------------------------------------------

    def add(self, records: list[PaperRecord], report: ImportReport | None = None) -> ImportReport:
        """Insert or merge records in ONE transaction; the snapshot follows the commit."""
        report = report or ImportReport()
        with self.conn:
            for raw in records:
                rec = raw.normalized()
                if not rec.title:
                    report.problems.append(f"{rec.key}: no title, skipped")
                    continue
                existing = self.find_same(rec)
                if existing is None:
                    rec = rec.model_copy(update={"key": self._free_key(rec.key)})
                    self._write(rec)
                    report.added.append(rec.key)
                    continue
                merged, changed = merge_records(existing, rec)
                if changed:
                    self._write(merged, replace=True)
                    report.merged.append((rec.key, existing.key))
                else:
                    report.unchanged.append(existing.key)
            if report.added or report.merged:
                bump_generation(self.conn)  # derived data (vectors, link state) is now stale
        if report.added or report.merged:
            self.write_snapshot()
        return report

    def _free_key(self, key: str) -> str:
        """A BibTeX key already taken by a different work gets a letter suffix."""
        candidate, n = key, 0
        while self.conn.execute("SELECT 1 FROM papers WHERE key = ? UNION "
                                "SELECT 1 FROM aliases WHERE alias = ?",
                                (candidate, candidate)).fetchone():
            n += 1
            candidate = f"{key}{chr(ord('a') + (n - 1) % 26)}{'' if n <= 26 else n}"
        return candidate

    def _write(self, rec: PaperRecord, replace: bool = False) -> None:
        c = self.conn
        if replace:
            c.execute("DELETE FROM papers WHERE key = ?", (rec.key,))
            c.execute("DELETE FROM papers_fts WHERE key = ?", (rec.key,))
        c.execute("INSERT INTO papers VALUES (?, ?, ?, ?)",
                  (rec.key, identity.normalize_title(rec.title), rec.year, rec.model_dump_json()))
        for ident in rec.id_keys():
            c.execute("INSERT OR IGNORE INTO ids VALUES (?, ?)", (ident, rec.key))
        for alias in rec.aliases:
            c.execute("INSERT OR IGNORE INTO aliases VALUES (?, ?)", (alias, rec.key))
        c.execute("INSERT INTO papers_fts VALUES (?, ?, ?, ?, ?, ?)",
                  (rec.key, identity.fold(rec.title), identity.fold(" ; ".join(rec.authors)),
                   identity.fold(" ; ".join(rec.keywords)), identity.fold(rec.abstract),
                   identity.fold(rec.venue)))

    def fingerprint(self) -> str:
        """Changes whenever any record changes (stored in paper_links.json)."""
        import hashlib

        h = hashlib.sha256()
        for (data,) in self.conn.execute("SELECT data FROM papers ORDER BY key"):
            h.update(data.encode())
        return h.hexdigest()[:16]

    def write_snapshot(self, path: Path | None = None) -> Path | None:
        if path is None and not self.snapshot:
            return None
        target = path or snapshot_path(self.path)
        write_text(target, to_jsonl(self.all()))
        return target


def to_jsonl(records: list[PaperRecord]) -> str:
    """One record per line, sorted by key, fields in a fixed order: stable for diffs."""
    lines = [json.dumps(r.model_dump(mode="json"), ensure_ascii=False, sort_keys=True)
             for r in sorted(records, key=lambda r: r.key)]
    return "\n".join(lines) + ("\n" if lines else "")
