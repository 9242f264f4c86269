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
import threading
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

    from ..contracts.settings.sources import require_opt_in, served_settings
    from .mcp import Registry, build_server

    token = None
    if args.transport == "http" and (args.require_token or not is_loopback(args.host)):
        token = os.environ.get(TOKEN_ENV, "").strip()
        if len(token) < MIN_TOKEN_CHARS:
            why = "--require-token" if is_loopback(args.host) else \
                f"binding to {args.host} (not loopback)"
            raise UserError(f"{why} needs a bearer token: set {TOKEN_ENV} to a secret of at "
                            f"least {MIN_TOKEN_CHARS} characters")
    dirs = _index_dirs(args.index)
    # Settings never come from the working directory (a client may start the server inside
    # an untrusted repository): --settings, else each index's recorded settings, else the
    # user's config folder. Whatever would send code off the machine needs --allow-remote.
    settings = {d: served_settings(d, args.settings) for d in dirs}
    for s in settings.values():
        require_opt_in(s, args.allow_remote, stages=("answers",), source=s.source)
    quiet = _stdout_to_stderr() if args.transport == "stdio" else contextlib.nullcontext()
    with quiet:
        registry = Registry(dirs, lambda d: settings[d], remote_allowed=args.allow_remote)
    mcp = build_server(registry, log_level=args.log_level)
    print(f"codeteacher: serving {', '.join(registry.slots)} over {args.transport}",
          file=sys.stderr, flush=True)
    grace = registry.settings.limits.shutdown_grace_s
    try:
        if args.transport == "stdio":
            anyio.run(mcp.run_stdio_async)
        else:
            anyio.run(serve_http, mcp, args.host, args.port, token, args.log_level, grace)
    finally:
        _exit_soon(grace, 130 if isinstance(sys.exc_info()[1], KeyboardInterrupt) else 0)
    return 0


def _exit_soon(grace: float, code: int) -> None:
    """Interpreter shutdown joins every worker thread: a tool call still running, or the stdio
    reader blocked on stdin, would keep the process alive after SIGTERM/SIGINT. Give them
    `grace` seconds, then exit regardless."""
    def force():
        sys.stderr.flush()
        os._exit(code)

    t = threading.Timer(grace, force)
    t.daemon = True
    t.start()


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


def transport_security(host: str, port: int):
    """DNS-rebinding protection for a loopback bind: only the Host and Origin values that name
    the address actually bound (in each spelling) are accepted, for every loopback address
    (127.0.0.0/8, ::1 however written, localhost), not only the SDK's three defaults. A
    non-loopback bind needs the bearer token instead, and may be reached by any name."""
    from mcp.server.transport_security import TransportSecuritySettings

    if not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = {host.strip("[]")}
    if host == "localhost":
        names |= {"127.0.0.1", "::1"}
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
        names |= {str(ip), ip.exploded}
        if str(ip) in ("127.0.0.1", "::1"):
            names.add("localhost")
    except ValueError:
        pass
    hosts, origins = [], []
    for n in sorted(names):
        shown = f"[{n}]" if ":" in n else n
        hosts.append(f"{shown}:{port}")
        origins.append(f"http://{shown}:{port}")
        if port == 80:
            hosts.append(shown)
            origins.append(f"http://{shown}")
    return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                     allowed_hosts=hosts, allowed_origins=origins)


async def serve_http(mcp, host: str, port: int, token: str | None, log_level: str,
                     grace: float = 3.0) -> None:
    import math

    import uvicorn

    sock = _bind(host, port)
    bound = sock.getsockname()[1]  # the real port (port 0 picks one): the allow-list needs it
    app = mcp.streamable_http_app(host=host, streamable_http_path="/mcp",
                                  transport_security=transport_security(host, bound))
    if token:
        app = BearerTokenMiddleware(app, token)
    shown = f"[{host}]" if ":" in host else host
    print(f"codeteacher MCP server on http://{shown}:{bound}/mcp"
          f"{' (bearer token required)' if token else ''}", file=sys.stderr, flush=True)
    # On SIGTERM/SIGINT uvicorn stops accepting, gives open streams `grace` seconds, then
    # closes them; cmd_serve's watchdog covers worker threads that are still busy.
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level.lower(), lifespan="on",
                                           timeout_graceful_shutdown=math.ceil(grace)))
    await server.serve(sockets=[sock])


def _executable() -> tuple[str, list[str]]:
    """The absolute codeteacher command of this installation (else `python -m`)."""
    candidates = [Path(sys.argv[0]) if Path(sys.argv[0]).name == "codeteacher" else None,
                  Path(sys.executable).parent / "codeteacher",
                  Path(shutil.which("codeteacher") or "")]
    for c in candidates:
        if c and c.name == "codeteacher" and c.is_file() and os.access(c, os.X_OK):
            return str(c.absolute()), []
    return str(Path(sys.executable).absolute()), ["-m", "codeteacher.shells.cli"]


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
        args += ["--index", str(Path(d).expanduser().absolute())]
    # An environment variable of this shell is not in the client's environment: pin it.
    settings = settings or os.environ.get("CODETEACHER_SETTINGS")
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
    p.add_argument("--settings", help="runtime_settings.json to use (default: the settings "
                   "recorded in the index, else ~/.config/codeteacher/runtime_settings.json; "
                   "never one in the current folder)")
    p.add_argument("--allow-remote", action="store_true", help="allow settings that send code "
                   "or secrets to another host (answers from a non-loopback base_url)")
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
