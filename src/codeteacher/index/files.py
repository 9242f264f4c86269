"""Reading repository files safely: regular files inside the repository, of bounded size.

A repository is untrusted input and may change after indexing: a FIFO would block a read
forever, a device never ends, and a symlink may point anywhere on the machine. Every read of
repository content (collection, get_code, staleness hashing) goes through `read_repo_file`.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from ..contracts.errors import UserError


class RefusedFile(UserError):
    """A repository path that must not be read; `reason` is a short label for counts."""

    def __init__(self, reason: str, rel: str):
        super().__init__(f"{reason}: {rel[:200]}")
        self.reason = reason


def read_repo_file(root: str | Path, rel: str, max_bytes: int | None = None) -> bytes:
    """The bytes of `root/rel`, or RefusedFile (outside the repository, not a regular file,
    too large) / OSError (missing, unreadable). Opens without blocking and checks the opened
    file itself, so a path swapped for a FIFO between the check and the read cannot hang."""
    root = Path(root).resolve()
    full = root / rel
    try:
        real = full.resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # missing, broken link, symlink loop
        if full.is_symlink():
            raise RefusedFile("broken symlink", rel) from None
        raise FileNotFoundError(2, "no such file", str(rel)) from exc
    if not real.is_relative_to(root):
        raise RefusedFile("symlink out of the repository", rel)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        if exc.errno in (getattr(os, "ELOOP", -1), getattr(os, "ENXIO", -1)):
            raise RefusedFile("not a regular file", rel) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RefusedFile("not a regular file", rel)
        if max_bytes is not None and info.st_size > max_bytes:
            raise RefusedFile("too large", rel)
        limit = info.st_size if max_bytes is None else max_bytes
        chunks, total = [], 0
        while True:  # a file that grows while read is cut at the limit, not read forever
            block = os.read(fd, min(1 << 20, limit + 1 - total))
            if not block:
                break
            chunks.append(block)
            total += len(block)
            if total > limit:
                if max_bytes is not None:
                    raise RefusedFile("too large", rel)
                break
        return b"".join(chunks)
    finally:
        os.close(fd)
