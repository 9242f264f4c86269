"""Identifier-aware tokens and the BM25 index (bm25s) built over them.

Code search fails with plain word tokenisers: `SparseMatrixBuilder` must match "sparse matrix
builder" and "SparseMatrixBuilder" alike. So each identifier yields itself (lower-cased) plus
its camelCase and snake_case parts; qualified names also yield their last component.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import numpy as np

# bm25s (and its scipy) is imported where an index is built or loaded: the tokenizer alone,
# which query analysis uses, needs none of it.

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+[A-Za-z][A-Za-z0-9_]*")
# A number with one letter after it is one part ("Mesh2D", "vec_3d", "lj1" -> "2d", "3d"):
# prose writes "2D" as one word, and "2" and "d" alone are too short to be tokens.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+[A-Za-z](?![a-z])|[0-9]+")
STOP = frozenset("""
a an and are as at be by can do does for from how i if in into is it its of on or that the
their them then there these this to was what when where which while who why will with within
would you your should could does did doing use used using via each than also only not
""".split())


def split_identifier(word: str) -> list[str]:
    parts: list[str] = []
    for piece in word.split("_"):
        if piece:
            parts.extend(m.group(0).lower() for m in _CAMEL.finditer(piece))
    return parts


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """English Snowball stem (PyStemmer): joins the prose of a question with the words inside
    identifiers ('integration' / 'IntegratorNVE' -> 'integr', 'boundaries' / 'boundary' ->
    'boundari'). Short words and words with digits stay as they are."""
    if len(word) <= 3 or not word.isalpha():
        return word
    return _snowball().stemWord(word)


@lru_cache(maxsize=1)
def _snowball():
    import Stemmer  # PyStemmer: a C Snowball, ~1 µs a word; imported on first use

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def _word_tokens(word: str) -> tuple[str, ...]:
    low = word.lower().strip("_")
    if len(low) < 2 or low in STOP:
        return ()
    out = [low]
    parts = split_identifier(word)
    if len(parts) > 1:
        out.extend(p for p in parts if len(p) > 1 and p not in STOP)
    for p in (parts if len(parts) > 1 else [low]):
        st = stem(p)
        if st != p:
            out.append(st)
    return tuple(out)


def tokenize(text: str) -> list[str]:
    """Tokens for BM25: whole identifiers plus their parts and light stems, stop words removed.
    Words repeat massively in code, so each distinct word is analysed once (cached)."""
    out: list[str] = []
    for word in _WORD.findall(text):
        out.extend(_word_tokens(word))
    return out


_CONNECTORS = {"in", "of", "and", "to", "on", "for"}


def acronyms(text: str, vocab) -> list[str]:
    """Acronyms of 2-4 consecutive words that the corpus uses as tokens ("message passing
    interface" -> "mpi"); code names things by acronym far more often than prose does."""
    words = re.findall(r"[A-Za-z][A-Za-z0-9]*", text.lower())
    out: list[str] = []
    for i in range(len(words)):
        if words[i] in STOP or words[i] in _CONNECTORS:
            continue
        letters = words[i][0]
        for j in range(i + 1, min(i + 6, len(words))):
            w = words[j]
            letters += w[0]
            if w in STOP and w not in _CONNECTORS:
                break
            if w in _CONNECTORS:
                continue
            # Two letters from short words ("line options" -> "lo") are mostly noise.
            if len(letters) == 2 and min(len(words[i]), len(w)) < 6:
                continue
            if 2 <= len(letters) <= 5 and letters in vocab and letters not in out:
                out.append(letters)
    return out


def abbreviations(text: str, vocab, table: dict[str, list[str]], df: dict[str, int] | None = None,
                  ratio: float = 0.0) -> list[str]:
    """The short forms code writes for the question's words ("time step" -> `dt`, "neighbour"
    -> `neigh`), from a table of generic programming abbreviations (`table`: a phrase, as
    a regular expression, -> its short forms), kept when the corpus uses them as tokens.
    With `df` and `ratio`, a short form is kept only when at least `ratio` times as many
    chunks hold it as hold the words written out (their commonest token, or the words run
    together): a code that says "neighbor" where it means it needs no `neigh`."""
    low = text.lower()
    out: list[str] = []
    for phrase, shorts in table.items():
        m = re.search(r"\b(?:" + phrase + r")\b", low)
        if not m:
            continue
        long_df = 0
        if df is not None and ratio:
            words = m.group(0)
            forms = set(tokenize(words)) | {re.sub(r"[\s-]+", "", words)}
            long_df = max((df.get(t, 0) for t in forms), default=0)
        out += [a for a in shorts if a in vocab and a not in out
                and (not long_df or df.get(a, 0) >= ratio * long_df)]
    return out


FILES_SUBDIR = "files"  # whole-file BM25, inside the chunk BM25 folder


class SavedScores:
    """The read side of a saved bm25s index, for querying: bm25s stores every (token, document)
    BM25 score in a CSC matrix, and for these methods (no non-occurrence term) a query's scores
    are the sums of its tokens' columns, which is all `bm25s.BM25.get_scores` does (the same
    float32 additions in the same order). Reading the arrays with numpy spares every cold `ask`
    importing bm25s and scipy (~0.3 s); building and other methods go through bm25s."""
    METHODS = ("lucene", "robertson", "atire")

    def __init__(self, folder: Path, params: dict):
        import json

        arr = {k: np.load(folder / f"{k}.csc.index.npy") for k in ("data", "indices", "indptr")}
        self.data, self.indices, self.indptr = arr["data"], arr["indices"], arr["indptr"]
        self.vocab_dict = json.loads((folder / "vocab.index.json").read_text(encoding="utf-8"))
        # The same `scores` map a built bm25s index keeps (its CSC arrays and size).
        self.scores = {**arr, "num_docs": int(params["num_docs"])}
        self.dtype = np.dtype(params.get("dtype", "float32"))

    @classmethod
    def open(cls, folder: Path) -> "SavedScores | None":
        import json

        try:
            params = json.loads((folder / "params.index.json").read_text(encoding="utf-8"))
            if params.get("method") not in cls.METHODS:
                return None
            return cls(folder, params)
        except (OSError, ValueError, KeyError):
            return None  # bm25s reads it (or says what is wrong)

    def get_scores(self, tokens: list[str]) -> np.ndarray:
        out = np.zeros(self.scores["num_docs"], dtype=self.dtype)
        for t in tokens:
            i = self.vocab_dict[t]
            a, b = self.indptr[i], self.indptr[i + 1]
            out[self.indices[a:b]] += self.data[a:b]  # a column's documents are distinct
        return out


class LexicalIndex:
    """BM25 over token lists; scores for every document at once (corpora are small).

    `files` (optional) is a second BM25 over whole files, one document per repository file:
    a file's words together say what it is about better than any one of its chunks."""

    def __init__(self, retriever, df: dict[str, int] | None = None):
        self._r = retriever
        self.vocab = retriever.vocab_dict
        self.df = df or {}
        self.n_docs = int(retriever.scores["num_docs"])
        self.files: FileLexicalIndex | None = None

    def idf(self, token: str) -> float:
        """BM25-style inverse document frequency (unknown tokens count as rare)."""
        import math

        df = self.df.get(token, 0)
        return math.log((self.n_docs - df + 0.5) / (df + 0.5) + 1.0)

    @classmethod
    def build(cls, docs: list[list[str]]) -> "LexicalIndex":
        import bm25s
        from bm25s.tokenization import Tokenized

        vocab: dict[str, int] = {}
        ids = [[vocab.setdefault(t, len(vocab)) for t in d] or [vocab.setdefault("", len(vocab))]
               for d in docs]
        vocab.setdefault("", len(vocab))
        retriever = bm25s.BM25()
        retriever.index(Tokenized(ids=ids, vocab=vocab), show_progress=False)
        df: dict[str, int] = {}
        for d in docs:
            for t in set(d):
                df[t] = df.get(t, 0) + 1
        return cls(retriever, df)

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        known = [t for t in dict.fromkeys(query_tokens) if t in self.vocab and t]
        if not known:
            return np.zeros(self._r.scores["num_docs"], dtype=np.float32)
        return np.asarray(self._r.get_scores(known), dtype=np.float32)

    def column(self, token: str) -> tuple[np.ndarray, np.ndarray]:
        """The documents that hold `token` and its BM25 score in each (the CSC column that a
        built bm25s index and a loaded `SavedScores` both keep in `scores`)."""
        i = self.vocab.get(token)
        if i is None or not token:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        csc = self._r.scores
        a, b = csc["indptr"][i], csc["indptr"][i + 1]
        return np.asarray(csc["indices"][a:b]), np.asarray(csc["data"][a:b], dtype=np.float32)

    def save(self, folder: Path) -> None:
        import json

        if isinstance(self._r, SavedScores):
            raise TypeError("a loaded index is read-only; build one to save it")
        self._r.save(str(folder), show_progress=False)
        (Path(folder) / "df.json").write_text(json.dumps(self.df), encoding="utf-8")
        if self.files is not None:
            self.files.save(Path(folder) / FILES_SUBDIR)

    @classmethod
    def load(cls, folder: Path) -> "LexicalIndex":
        import json

        df_file = Path(folder) / "df.json"
        df = json.loads(df_file.read_text(encoding="utf-8")) if df_file.is_file() else {}
        saved = SavedScores.open(Path(folder))
        if saved is not None:
            index = cls(saved, df)
        else:
            import bm25s

            index = cls(bm25s.BM25.load(str(folder), show_progress=False), df)
        if (Path(folder) / FILES_SUBDIR / "paths.json").is_file():
            index.files = FileLexicalIndex.load(Path(folder) / FILES_SUBDIR)
        return index


def file_tokens(path: str, text: str) -> list[str]:
    """Tokens of a whole file: its path words, then its text."""
    return tokenize(path.replace("/", " ").replace(".", " ") + " " + text)


class FileLexicalIndex:
    """BM25 with one document per repository file (path -> row)."""

    def __init__(self, index: LexicalIndex, paths: list[str]):
        self.index, self.paths = index, paths

    @classmethod
    def build(cls, root: Path, paths: list[str]) -> "FileLexicalIndex":
        docs = []
        for p in paths:
            try:
                text = (Path(root) / p).read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            docs.append(file_tokens(p, text))
        return cls(LexicalIndex.build(docs), list(paths))

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        return self.index.scores(query_tokens)

    def save(self, folder: Path) -> None:
        import json

        folder.mkdir(parents=True, exist_ok=True)
        self.index.save(folder)
        (folder / "paths.json").write_text(json.dumps(self.paths), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> "FileLexicalIndex":
        import json

        paths = json.loads((folder / "paths.json").read_text(encoding="utf-8"))
        return cls(LexicalIndex.load(folder), paths)
