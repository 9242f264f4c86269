"""Offline ingest: collect, parse, graph, entities, explanations, embedding stages and the atomic build."""
