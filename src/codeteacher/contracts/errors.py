"""User-facing errors: shells print `error: <message>` on one line and exit non-zero."""


class UserError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""

    exit_code = 2


class IndexError_(UserError):
    """A missing, corrupt or incompatible index."""


def describe(exc: BaseException) -> str:
    """One line naming an unexpected failure: 'RecursionError: maximum recursion depth ...'."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")
