"""Small, atomic JSON/JSONL/NumPy/text file helpers: every file codeteacher writes goes through
`atomic_path` (a temporary file beside the target, renamed over it), so readers never see half
a file, and every file gets the ordinary umask-based mode."""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from .errors import UserError

M = TypeVar("M", bound=BaseModel)

# mkstemp creates 0600 files; index files get the usual umask-based mode so that an index
# shared with a group (or read by a service account) is readable like the FAISS/BM25 files.
_UMASK = os.umask(0)
os.umask(_UMASK)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A new empty file beside `path` to write (or open as SQLite) in the block; renamed over
    `path` when the block succeeds, removed when it fails."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)
        os.close(fd)
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _atomic_write(path: Path, write) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        write(fh)


def write_text(path: str | Path, text: str) -> None:
    _atomic_write(Path(path), lambda fh: fh.write(text.encode("utf-8")))


def write_json(path: Path, data) -> None:
    # Models serialise in pydantic's Rust core: several times faster than json.dumps, which
    # matters for the multi-MB structure file on every incremental rebuild.
    if isinstance(data, BaseModel):
        payload = data.model_dump_json(indent=1).encode("utf-8")
    else:
        payload = json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8")
    _atomic_write(path, lambda fh: fh.write(payload))


def write_jsonl(path: Path, items: Iterable[BaseModel | dict]) -> None:
    def write(fh):
        for item in items:
            if isinstance(item, BaseModel):
                fh.write(item.model_dump_json().encode("utf-8"))
            else:
                fh.write(json.dumps(item, ensure_ascii=False).encode("utf-8"))
            fh.write(b"\n")
    _atomic_write(path, write)


def write_npy(path: Path, array: np.ndarray) -> None:
    _atomic_write(path, lambda fh: np.save(fh, array))


def read_json(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"missing file: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"corrupt file {path}: {exc}") from None


def read_model(path: Path, model: type[M]) -> M:
    try:
        return model.model_validate(read_json(path))
    except ValueError as exc:
        if isinstance(exc, UserError):
            raise
        raise UserError(f"corrupt file {path}: not a valid {model.__name__}") from None


def read_jsonl(path: Path, model: type[M]) -> list[M]:
    """Every line of a JSONL file as `model`; a missing or invalid file is a one-line UserError
    naming the file, the line and what is wrong with it."""
    out: list[M] = []
    n = 0
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    out.append(model.model_validate_json(line))
    except FileNotFoundError:
        raise UserError(f"missing file: {path}") from None
    except (ValueError, UnicodeDecodeError) as exc:  # pydantic's ValidationError is a ValueError
        raise UserError(f"corrupt file {path} at line {n}: not a valid {model.__name__} "
                        f"({_why(exc)})") from None
    return out


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc']) or 'value'}: {first['msg']}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
