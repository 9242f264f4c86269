"""User-facing errors: shells print `error: <message>` on one line and exit non-zero."""


class UserError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""

    exit_code = 2


class IndexError_(UserError):
    """A missing, corrupt or incompatible index."""
