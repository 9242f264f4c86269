"""Parsers: tree-sitter C/C++/CUDA chunks (cpp) and doc, build and script texts (text)."""
