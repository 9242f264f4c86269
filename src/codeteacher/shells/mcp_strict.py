"""Strict, bounded MCP tools on top of the SDK's MCPServer.

The SDK's defaults are lenient: argument models accept unknown keys and coerce "5" or true
to numbers, validation errors come back as multi-line pydantic text with a URL, an unknown
tool name is echoed whole, and a sync tool runs as long as it likes. Here:
- argument models forbid unknown keys and coerce nothing (the published input schema says
  `additionalProperties: false`);
- every error is one line of bounded length, naming the argument, never echoing the input;
- tool bodies run in worker threads (bounded in number), off the event loop that answers
  every other client, under a per-call time limit.
"""
import functools

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools.base import Tool
from pydantic import ConfigDict, ValidationError

from ..contracts.settings.limits import shorten


def one_line(text: str, limit: int) -> str:
    return shorten(text, limit)


def validation_message(exc: ValidationError, limit: int) -> str:
    """'invalid argument 'k': Input should be greater than or equal to 1' and the like."""
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    parts = []
    for e in errors[:3]:
        loc = shorten(".".join(str(p) for p in e["loc"]) or "arguments", 60)
        if e["type"] == "missing":
            parts.append(f"missing required argument '{loc}'")
        elif e["type"] == "extra_forbidden":
            parts.append(f"unknown argument '{loc}'")
        else:
            parts.append(f"invalid argument '{loc}': {e['msg']}")
    if len(errors) > 3:
        parts.append(f"and {len(errors) - 3} more")
    return one_line("; ".join(parts), limit)


class StrictTool(Tool):
    max_error_chars: int = 400

    async def run(self, arguments, context, convert_result: bool = False):
        # Validated here first, strictly, so that the SDK's own (lenient, multi-line) path
        # only ever sees arguments that pass.
        try:
            self.fn_metadata.arg_model.model_validate(arguments)
        except ValidationError as exc:
            raise ToolError(validation_message(exc, self.max_error_chars)) from None
        return await super().run(arguments, context, convert_result)


def strict_tool(fn, *, name: str, title: str, description: str, annotations,
                max_error_chars: int) -> StrictTool:
    tool = StrictTool.from_function(fn, name=name, title=title, description=description,
                                    annotations=annotations, structured_output=True)
    base = tool.fn_metadata.arg_model
    strict = type(base.__name__, (base,), {
        "__module__": base.__module__,
        "model_config": ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)})
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    tool.max_error_chars = max_error_chars
    return tool


def offloaded(fn, timeout_s: float, threads: int):
    """`fn` as an async tool body: run in a worker thread (at most `threads` at once) and
    answered with an error after `timeout_s`. A thread cannot be killed, so a call past its
    limit is abandoned (it finishes in the background, its result dropped); inputs are bounded
    by the limits settings, so it does finish."""
    limiter = None

    @functools.wraps(fn)
    async def call(**kwargs):
        nonlocal limiter
        if limiter is None:  # created inside the running event loop
            limiter = anyio.CapacityLimiter(threads)
        try:
            with anyio.fail_after(timeout_s):
                return await anyio.to_thread.run_sync(functools.partial(fn, **kwargs),
                                                      abandon_on_cancel=True, limiter=limiter)
        except TimeoutError:
            raise ToolError(f"{fn.__name__} took longer than {timeout_s:g} s "
                            "(limits.tool_timeout_s); ask for less") from None
    return call


class BoundedServer(MCPServer):
    """Every tool error (including an unknown tool name) leaves as one bounded line."""

    max_error_chars = 400

    async def call_tool(self, name, arguments, context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise  # generic text already; the traceback stays in the server log
        except ToolError as exc:
            raise ToolError(one_line(str(exc), self.max_error_chars)) from exc.__cause__
