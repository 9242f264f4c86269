"""Paper links (issue 7): a local paper library, citations found in code, and code-to-paper links.

Modules: identity (normalisation, the one place for identity rules), model (PaperRecord, merge),
library (SQLite + FTS5 store and JSONL snapshot), formats (BibTeX/CSL-JSON/JSONL/CFF in and out),
citations (extraction and resolution), terms (generic concept extraction), state (what linking
needs per paper, prepared once per library change), vectors (paper vectors stored in the library
per record hash and model, and the FAISS HNSW index beside it), scoring (the Linker), linking
(paper_links.json, `build_paper_links`, `links_for`, `link_target`, per-process caches), online
(optional OpenAlex, Crossref, arXiv clients), api (plain functions for shells), cli (`register`).
Settings: contracts/settings/papers.py.

Nothing is imported here: `codeteacher.settings` imports `papers.config` at start-up.
"""
