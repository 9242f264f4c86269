"""`codeteacher serve` (the MCP server) and `codeteacher mcp-config` (the client snippet).

Registered into the main CLI by cli.build_parser(); the MCP SDK is imported only when a
command runs, so `codeteacher --help` stays fast.
"""
from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import os
import shutil
import sys
from pathlib import Path

from ..contracts.errors import UserError

DEFAULT_PORT = 8765
TOKEN_ENV = "CODETEACHER_MCP_TOKEN"
MIN_TOKEN_CHARS = 16


def _index_dirs(given: list[str] | None) -> list[Path]:
    if given:
        dirs = [Path(d).expanduser().absolute() for d in given]
    else:
        from .cli import _default_index

        dirs = [Path(_default_index()).expanduser().absolute()]
    for d in dirs:
        if not (d / "manifest.json").is_file():
            raise UserError(f"{d} is not a codeteacher index (no manifest.json); build one with "
                            "`codeteacher index REPO --out DIR`")
    return dirs


@contextlib.contextmanager
def _stdout_to_stderr():
    """Under stdio, fd 1 is the MCP wire: nothing (not even C libraries) may write to it
    while models and indexes load. While serving, the SDK diverts fd 1 itself."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def cmd_serve(args) -> int:
    import anyio

    from ..contracts.settings import load_settings
    from .mcp import Registry, build_server

    token = None
    if args.transport == "http" and (args.require_token or not is_loopback(args.host)):
        token = os.environ.get(TOKEN_ENV, "").strip()
        if len(token) < MIN_TOKEN_CHARS:
            why = "--require-token" if is_loopback(args.host) else \
                f"binding to {args.host} (not loopback)"
            raise UserError(f"{why} needs a bearer token: set {TOKEN_ENV} to a secret of at "
                            f"least {MIN_TOKEN_CHARS} characters")
    quiet = _stdout_to_stderr() if args.transport == "stdio" else contextlib.nullcontext()
    with quiet:
        registry = Registry(_index_dirs(args.index), load_settings(args.settings))
    mcp = build_server(registry, log_level=args.log_level)
    print(f"codeteacher: serving {', '.join(registry.slots)} over {args.transport}",
          file=sys.stderr, flush=True)
    if args.transport == "stdio":
        anyio.run(mcp.run_stdio_async)
    else:
        anyio.run(serve_http, mcp, args.host, args.port, token, args.log_level)
    return 0


# ---- HTTP: loopback by default, bearer token otherwise -------------------------------------

def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def bearer_ok(headers: list[tuple[bytes, bytes]], token: str) -> bool:
    """True when the ASGI headers carry `Authorization: Bearer <token>` (constant-time)."""
    for k, v in headers:
        if k.lower() == b"authorization":
            scheme, _, given = v.decode("latin-1").partition(" ")
            return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(),
                                                                       token.encode())
    return False


class BearerTokenMiddleware:
    """Refuses every HTTP request without the bearer token (ASGI; lifespan passes through)."""

    def __init__(self, app, token: str):
        self.app, self.token = app, token

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not bearer_ok(scope["headers"], self.token):
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] == "http" and not bearer_ok(scope["headers"], self.token):
            body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"www-authenticate", b'Bearer realm="codeteacher"'),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def _bind(host: str, port: int):
    import socket

    try:
        family, stype, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, stype, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(128)
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


async def serve_http(mcp, host: str, port: int, token: str | None, log_level: str) -> None:
    import uvicorn

    app = mcp.streamable_http_app(host=host, streamable_http_path="/mcp")
    if token:
        app = BearerTokenMiddleware(app, token)
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"codeteacher MCP server on http://{shown}:{bound}/mcp"
          f"{' (bearer token required)' if token else ''}", file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level.lower(), lifespan="on"))
    await server.serve(sockets=[sock])


def _executable() -> tuple[str, list[str]]:
    """The absolute codeteacher command of this installation (else `python -m`)."""
    candidates = [Path(sys.argv[0]) if Path(sys.argv[0]).name == "codeteacher" else None,
                  Path(sys.executable).parent / "codeteacher",
                  Path(shutil.which("codeteacher") or "")]
    for c in candidates:
        if c and c.name == "codeteacher" and c.is_file() and os.access(c, os.X_OK):
            return str(c.absolute()), []
    return str(Path(sys.executable).absolute()), ["-m", "codeteacher.cli"]


def mcp_config(index_dirs: list[Path], transport: str = "stdio", host: str = "127.0.0.1",
               port: int = DEFAULT_PORT, settings: str | None = None) -> dict:
    if transport == "http":
        shown = f"[{host}]" if ":" in host else host
        entry: dict = {"type": "http", "url": f"http://{shown}:{port}/mcp"}
        if not is_loopback(host):
            entry["headers"] = {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}
        return {"mcpServers": {"codeteacher": entry}}
    command, args = _executable()
    args = [*args, "serve"]
    for d in index_dirs:
        args += ["--index", str(d)]
    if settings:
        args += ["--settings", str(Path(settings).expanduser().resolve())]
    return {"mcpServers": {"codeteacher": {"command": command, "args": args}}}


def cmd_mcp_config(args) -> int:
    dirs = _index_dirs(args.index)
    print(json.dumps(mcp_config(dirs, args.transport, args.host, args.port, args.settings),
                     indent=2))
    if args.transport == "http":
        idx = " ".join(f"--index {d}" for d in dirs)
        print(f"# start the server first: codeteacher serve --transport http --host {args.host} "
              f"--port {args.port} {idx}", file=sys.stderr)
    return 0


def register(sub) -> None:
    p = sub.add_parser("serve", help="serve indexes to AI assistants over MCP (stdio or HTTP)",
                       description="Load one or more indexes once and answer MCP tool calls "
                       "(ask, search_code, get_code, ...). A rebuilt index is picked up without "
                       "a restart.")
    p.add_argument("--index", action="append", help="index folder (repeat for several; "
                   "default: $CODETEACHER_INDEX or the only index under ./embeddings)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default loopback; "
                   "any other address requires $CODETEACHER_MCP_TOKEN)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="HTTP port (0: any free one)")
    p.add_argument("--require-token", action="store_true",
                   help="require the bearer token even on loopback")
    p.add_argument("--settings", help="runtime_settings.json to use")
    p.add_argument("--log-level", default="WARNING",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.set_defaults(func=cmd_serve)

    q = sub.add_parser("mcp-config", help="print the MCP client configuration snippet")
    q.add_argument("--index", action="append", help="index folder (repeat for several)")
    q.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    q.add_argument("--host", default="127.0.0.1")
    q.add_argument("--port", type=int, default=DEFAULT_PORT)
    q.add_argument("--settings", help="runtime_settings.json the server should use")
    q.set_defaults(func=cmd_mcp_config)
