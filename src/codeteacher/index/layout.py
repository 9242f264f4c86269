"""The on-disk index format: file names, the chunker version, and the texts derived from a record.

Everything that decides what an index folder holds, and so whether an old one can be reused
or read, has its home here: the ingest stages write these files and the loader reads them.
`embed_text` and `lexical_text` are part of the format too: a vector is cached under the hash
of its embedded text, and paper linking embeds entities the same way.
"""
from __future__ import annotations

from ..contracts.models import Chunk

# The version of everything from parsing to lexical tokens: an index built by another one is
# refused at load and rebuilt by `index` (cpp-ts-2: Snowball stems in the BM25 tokens; 3:
# #define and typedef blocks are chunks; 4: calls to alternatives of one callee resolve to each;
# 5: HIP sources are code, unit_test/ folders and tstX files are test scope; 6: calls to a
# function-like macro resolve to it; 7: a number and the letter after it are one identifier
# part, "Mesh2D" -> "2d"; 8: an #include inside a function or class body is an include;
# 9: unittesting/, regression-tests/ and the like are test folders; 10: a file a tool says it
# wrote (collect.generated_marker) is scope 'generated'; 11: a member or subclass belongs to
# the nearest copy of its class, the one in its own port's folder; 12: a document name as a
# dotted part of a file name, X.README or INSTALL.unix, makes a document; 13: a script that
# drives the build, build.sh or configure, is scope 'build'; 14: continuous-integration
# configuration, .github/workflows/ or .travis.yml, is scope 'test'; 15: a LaTeX document is
# split at its sectioning commands, each section titled by its heading; 16: Fortran is parsed
# by tree-sitter-fortran into program units, no longer cut into line windows; 17: a Fortran
# unit's calls are its own, not those of the procedures it contains; 18: a Fortran derived type
# is a struct chunk; 19: inline-implementation files (.icc, .txx, .i) and C++ module units
# are C++ code, parsed, not line windows).
CHUNKER_VERSION = "cpp-ts-20"
FILES, CHUNKS, FACTS = "files.json", "chunks.jsonl", "file_facts.json"
STRUCTURE, ENTITIES, EXPLANATIONS = "project_structure.json", "entities.jsonl", "explanations.jsonl"
RECORDS, VECTORS, VECTOR_KEYS = "records.jsonl", "vectors.npy", "vector_keys.json"
FAISS, BM25, MANIFEST = "faiss.index", "bm25", "manifest.json"
LINKS_FILE = "paper_links.json"  # code-paper links, written by `papers build` or a build


def embed_text(c: Chunk, max_code_chars: int) -> str:
    """Structured header (where, what, signature, comment, explanation) then the code."""
    head = [f"{c.path} | {c.kind} | {c.qualified_name or c.name}"]
    if c.signature:
        head.append(c.signature)
    if c.heading_path:
        head.append(" > ".join(c.heading_path))
    if c.comment:
        head.append(c.comment[:400])
    if c.explanation:
        head.append(c.explanation[:600])
    body = c.text[:max_code_chars]
    return "\n".join(head) + "\n" + body


def lexical_text(c: Chunk) -> str:
    path_words = c.path.replace("/", " ").replace(".", " ")
    return " ".join([path_words, c.name, c.qualified_name, c.signature, c.comment,
                     " ".join(c.heading_path), " ".join(c.bases), c.explanation, c.text])


# ---- identities -------------------------------------------------------------------------------
# A chunk id names its file, kind, name and first line; graph node ids and entity ids put a
# prefix before a path or a chunk id. They are stored in every stage file, so they are part of
# the format and have this one home: nothing else builds or slices them by hand.

_FILE, _MODULE, _SYM, _CHAIN = "file:", "module:", "sym:", "chain:"


def file_node(path: str) -> str:
    """Graph node (and file entity / record id) of a repository file."""
    return _FILE + path


def module_node(path: str) -> str:
    """Graph node (and module entity / record id) of a folder ('' is the repository root)."""
    return _MODULE + path


def sym_node(chunk_id: str) -> str:
    """Graph node of a code chunk."""
    return _SYM + chunk_id


def chain_id(root_chunk_id: str) -> str:
    """Id of the call-chain entity rooted at a function chunk."""
    return _CHAIN + root_chunk_id


def node_path(node: str) -> str | None:
    """The file path of a file node, else None."""
    return node[len(_FILE):] if node.startswith(_FILE) else None


def node_chunk(node: str) -> str | None:
    """The chunk id of a symbol node, else None."""
    return node[len(_SYM):] if node.startswith(_SYM) else None


def chain_root(entity_id: str) -> str | None:
    """The root chunk id of a call-chain entity id, else None."""
    return entity_id[len(_CHAIN):] if entity_id.startswith(_CHAIN) else None


def split_node(node: str) -> tuple[str, str]:
    """(kind, identity): 'sym:a.cpp#function:f@3' -> ('sym', 'a.cpp#function:f@3')."""
    kind, _, ident = node.partition(":")
    return kind, ident


class ChunkIds:
    """Chunk ids of one file: '<path>#<kind>:<name>@<first line>', made unique with '~2', '~3'
    when two chunks share all four (overloads on one line, macro-generated code)."""

    def __init__(self, path: str):
        self.path = path
        self._seen: set[str] = set()

    def new(self, kind: str, name: str, start_line: int) -> str:
        base = f"{self.path}#{kind}:{name}@{start_line}"
        cid, n = base, 1
        while cid in self._seen:
            n += 1
            cid = f"{base}~{n}"
        self._seen.add(cid)
        return cid


def vector_key(model_id: str, text: str) -> str:
    """Cache key of a record's vector (vector_keys.json): the model identity and the embedded
    text. Paper linking reuses an index's vectors only when these keys match."""
    import hashlib

    return hashlib.sha1(f"{model_id}\0{text}".encode("utf-8", "replace")).hexdigest()
