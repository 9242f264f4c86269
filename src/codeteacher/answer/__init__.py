"""Answers from retrieved evidence: the extractive answer and the LLM answer with its parsing."""
