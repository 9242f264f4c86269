"""The on-disk index format: file names, the chunker version, and the texts derived from a record.

Everything that decides what an index folder holds, and so whether an old one can be reused
or read, has its home here: the ingest stages write these files and the loader reads them.
`embed_text` and `lexical_text` are part of the format too: a vector is cached under the hash
of its embedded text, and paper linking embeds entities the same way.
"""
from __future__ import annotations

from ..contracts.models import Chunk

CHUNKER_VERSION = "cpp-ts-1"
FILES, CHUNKS, FACTS = "files.json", "chunks.jsonl", "file_facts.json"
STRUCTURE, ENTITIES, EXPLANATIONS = "project_structure.json", "entities.jsonl", "explanations.jsonl"
RECORDS, VECTORS, VECTOR_KEYS = "records.jsonl", "vectors.npy", "vector_keys.json"
FAISS, BM25, MANIFEST = "faiss.index", "bm25", "manifest.json"


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
