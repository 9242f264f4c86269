"""Online retrieval: query analysis, intent routing, candidates, rerank, graph expansion, selection, context."""
