"""The `limits` settings section: how much one request may ask of the API or the MCP server.

Every text a client sends is bounded before any work starts, so no single request can hold a
worker (or, through the GIL, the whole server) for long; errors are bounded too, so a huge
input never comes back as a huge message.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LimitSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_question_chars: int = Field(default=4000, ge=1, description="Longest question or "
                                    "search query accepted (ask, search_code): a few "
                                    "paragraphs; longer text is refused with a clear error.")
    max_path_chars: int = Field(default=1024, ge=1, description="Longest repository path or "
                                "folder accepted (get_code, file_summary, module_summary, "
                                "related, search path filters).")
    max_symbol_chars: int = Field(default=512, ge=1, description="Longest symbol name, paper "
                                  "reference or index name accepted.")
    max_list_items: int = Field(default=64, ge=1, description="Most items in a list argument "
                                "(kinds, paths filters).")
    tool_timeout_s: float = Field(default=60.0, gt=0, description="Per-call time limit of an "
                                  "MCP tool; past it the call is answered with an error (the "
                                  "work is abandoned) and the server keeps serving.")
    tool_threads: int = Field(default=4, ge=1, description="MCP tool calls run at once in "
                                "worker threads (more wait); keeps a flood of calls from "
                                "starving the event loop that answers everyone else.")
    max_error_chars: int = Field(default=400, ge=40, description="Longest error message sent "
                                 "back; errors are one line and never echo a whole input.")
    shutdown_grace_s: float = Field(default=3.0, gt=0, description="Seconds calls in flight "
                                    "get after SIGTERM/SIGINT before the server exits anyway.")


def shorten(text: str, limit: int = 80) -> str:
    """One line, at most `limit` characters: for quoting user input inside messages."""
    one = " ".join(str(text).split())
    return one if len(one) <= limit else one[: max(1, limit - 1)] + "…"
