"""The `papers` settings section: library location, linking weights, optional online sources."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PaperLinkWeights(_Section):
    """Each signal is scaled to [0, 1] before weighting; the score is their weighted sum (capped
    at 1). Explicit citations dominate because an author naming a paper next to the code is the
    strongest evidence there is; content signals decide where nothing is cited."""

    cited_in_chunk: float = Field(
        default=0.6, description="The entity's own text or comment cites the paper: the author "
        "said so, so this alone clears the minimum score.")
    cited_in_file: float = Field(
        default=0.12, description="Another part of the same file cites it: related but possibly "
        "about a neighbouring routine, so it needs content evidence to clear the minimum.")
    cited_in_repo: float = Field(
        default=0.04, description="The README or CITATION.cff cites it: true of the project as a "
        "whole, so it only breaks ties between otherwise relevant papers.")
    semantic: float = Field(
        default=0.3, description="Embedding similarity of entity text (+ explanation) with title, "
        "abstract and keywords: catches paraphrases that share no words.")
    concepts: float = Field(
        default=0.35, description="Share of the paper's distinctive terms (IDF-weighted keywords "
        "and title words) found among the entity's identifier and comment words.")
    lexical: float = Field(
        default=0.08, description="Full-text (FTS5 BM25) rank of the paper for the entity's terms, "
        "relative to the entity's best candidate.")
    recency: float = Field(
        default=0.01, description="Newer papers slightly preferred: minor, since founding papers "
        "of a method are often old and still the right reference.")
    citation_count: float = Field(
        default=0.02, description="log-scaled citation count: a weak prior for standard "
        "references; absent counts contribute nothing.")


class PaperOnlineSettings(_Section):
    enabled: bool = Field(default=False, description="Allow network look-ups (OpenAlex, Crossref, "
                          "arXiv). Off by default: the library works entirely offline.")
    mailto: str = Field(default="", description="Contact e-mail sent to OpenAlex/Crossref for "
                        "their polite pools.")
    openalex_url: str = Field(default="https://api.openalex.org",
                              description="OpenAlex API base URL (a mirror or a test server).")
    crossref_url: str = Field(default="https://api.crossref.org",
                              description="Crossref API base URL.")
    arxiv_url: str = Field(default="https://export.arxiv.org/api/query",
                           description="arXiv query API URL.")
    timeout_s: float = Field(default=20.0, description="Per-request timeout.")
    max_retries: int = Field(default=4, description="Retries on 429/5xx/connection errors.")
    backoff_s: float = Field(default=1.0, description="First retry delay, doubled each retry; a "
                             "Retry-After header takes precedence.")
    max_backoff_s: float = Field(default=60.0, description="Longest wait honoured per retry.")
    min_interval_s: float = Field(default=0.2, description="Minimum spacing of requests to one "
                                  "source (arXiv asks for 3 s; set per deployment).")
    cache_dir: str = Field(default="embeddings/papers_cache", description="On-disk response "
                           "cache; successful responses only.")


class PaperSettings(_Section):
    library: str = Field(default="embeddings/papers.sqlite", description="The paper library "
                         "(SQLite + FTS5); a JSONL snapshot is kept beside it.")
    link_on_index: bool = Field(default=False, description="Build paper_links.json during "
                                "'codeteacher index' when the library file exists.")
    snapshot: bool = Field(default=True, description="Rewrite <library>.jsonl after each change "
                           "(for moving and diffing).")
    link_kinds: list[str] = Field(
        default=["function", "method", "constructor", "operator", "function_part", "class",
                 "struct", "union", "enum", "file", "module", "doc_section"],
        description="Chunk kinds that receive paper links.")
    min_score: float = Field(default=0.15, description="Links scoring below this are not stored.")
    ask_min_score: float = Field(default=0.25, description="Links shown with an answer must score "
                                 "at least this: weak links from common words are noise there.")
    ask_max_papers: int = Field(default=3, description="Papers listed with an answer.")
    max_links: int = Field(default=5, description="Links stored per entity.")
    dense_k: int = Field(default=24, description="Candidates per entity from embedding search: "
                         "with thousands of papers the right one is often not among the dozen "
                         "most similar, so the pool is wider than the links kept.")
    lexical_k: int = Field(default=24, description="Candidates per entity from FTS5 search (wide "
                           "for the same reason).")
    semantic_floor: float = Field(default=0.3, description="Cosine similarity mapped to 0: MiniLM "
                                  "gives code and unrelated abstracts up to ~0.3.")
    semantic_margin: float = Field(default=0.1, description="A paper must also beat the entity's "
                                   "mean similarity to all papers by this much (some code is "
                                   "similar to every abstract).")
    semantic_ceiling: float = Field(default=0.6, description="Cosine similarity mapped to 1.")
    semantic_alone: float = Field(default=0.25, description="Share of the semantic credit a "
                                  "paper keeps when it shares no concept term with the entity: "
                                  "in a large library many papers read alike without being "
                                  "about the code, so similarity needs concepts to back it.")
    semantic_agreement: float = Field(default=0.5, description="Concept signal (0-1) at which "
                                      "the semantic credit counts in full; below it the credit "
                                      "rises linearly from semantic_alone.")
    concept_saturation: float = Field(default=3.0, description="Matched paper terms (in units of "
                                      "the mean IDF) that count as one full match; the concept "
                                      "signal is 1 - exp(-matches), so it saturates softly.")
    phrase_bonus: float = Field(default=0.5, description="Extra concept credit per paper keyword "
                                "found whole in the entity, scaled by how distinctive its words "
                                "are (a keyword is the authors' own name for their concept).")
    min_entity_chars: int = Field(default=100, description="Entities with less comment + code "
                                  "text are linked only through explicit citations (getters and "
                                  "one-liners say too little to match a paper on content).")
    entity_chars: int = Field(default=1500, description="Characters of entity text embedded.")
    embed_on_import: bool = Field(default=True, description="Embed new and changed records "
                                  "during 'papers import' (stored in the library), so the first "
                                  "link after an import does not pay for it.")
    ann_min_papers: int = Field(default=2000, description="From this many papers on, candidate "
                                "papers come from an HNSW index (FAISS) stored beside the "
                                "library; below it exact search over all vectors is as fast.")
    ann_hnsw_m: int = Field(default=32, description="HNSW graph degree: recall above 0.99 at "
                            "this size of library, for about 2x the vectors' memory.")
    ann_ef_construction: int = Field(default=80, description="HNSW build effort: built once "
                                     "per library change, so a good graph is worth it.")
    ann_ef_search: int = Field(default=96, description="HNSW search breadth: well above "
                               "dense_k, so the true nearest papers are found, at well under a "
                               "millisecond a query.")
    weights: PaperLinkWeights = Field(default_factory=PaperLinkWeights,
                                      description="How the link signals combine into a score.")
    online: PaperOnlineSettings = Field(default_factory=PaperOnlineSettings,
                                        description="Optional online sources (off by default).")
