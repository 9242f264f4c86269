"""Shells over the core API: the CLI, the MCP server and its launcher, and the trace view."""
