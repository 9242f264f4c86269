"""Where settings may come from, how their paths resolve, and what would leave the machine.

A settings file can switch on backends that send code (and an API key) to another host, so
where it is read from is a security decision: `serve` reads only an explicit `--settings`
(or $CODETEACHER_SETTINGS), else the settings recorded in the index, else the user's config
folder — never a file that happens to lie in the folder it was started from. Anything that
sends data off the machine must be allowed by an explicit flag as well.
"""
from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import UserError
from .limits import shorten

SETTINGS_FILE = "runtime_settings.json"
RECORDED_FILE = "settings.json"  # the settings an index was built with, inside the index
OPT_IN_FLAG = "--allow-remote"


def user_config_file() -> Path:
    """$XDG_CONFIG_HOME/codeteacher/runtime_settings.json (default ~/.config/...)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "codeteacher" / SETTINGS_FILE


def resolve_paths(data: dict, base: Path) -> dict:
    """Relative paths written in a settings file mean: relative to that file's folder."""
    papers = data.get("papers")
    if isinstance(papers, dict):
        _absolute(papers, "library", base)
        if isinstance(papers.get("online"), dict):
            _absolute(papers["online"], "cache_dir", base)
    return data


def _absolute(section: dict, key: str, base: Path) -> None:
    value = section.get(key)
    if isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
        section[key] = str((base / value).resolve())
    elif isinstance(value, str) and value:
        section[key] = str(Path(value).expanduser())


def is_loopback_url(url: str) -> bool:
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # any other host name may resolve anywhere


def off_machine(settings, stages=("explanations", "answers", "judge")) -> list[str]:
    """The settings (of the given generation stages, and paper look-ups) that would send code,
    questions or secrets to another host, each as one short line."""
    out = []
    for stage in stages:
        b = getattr(settings.generation, stage)
        if b.backend == "openai" and not is_loopback_url(b.base_url):
            out.append(f"generation.{stage}: openai at {shorten(b.base_url, 60)} (sends code and "
                       f"${shorten(b.api_key_env, 40)})")
    if settings.papers.online.enabled:
        out.append("papers.online.enabled (paper look-ups at OpenAlex, Crossref and arXiv)")
    return out


def require_opt_in(settings, allowed: bool, stages=("explanations", "answers", "judge"),
                   source: str = "") -> list[str]:
    """The off-machine uses of `settings`; UserError when there are some and none was allowed."""
    uses = off_machine(settings, stages)
    if uses and not allowed:
        where = f" ({shorten(source, 120)})" if source else ""
        raise UserError(f"settings{where} would send data off this machine: {'; '.join(uses)}; "
                        f"pass {OPT_IN_FLAG} to allow it")
    return uses


def served_settings(index_dir: Path, explicit: str | Path | None = None):
    """The settings `serve` uses for one index: an explicit file (--settings or
    $CODETEACHER_SETTINGS), else those recorded in the index at build time, else the user's
    config file, else the defaults; never a file of the working directory. A paper library
    left relative (a default, written in no file) is the one beside the index folder."""
    from . import Settings, read_settings_file

    recorded = Path(index_dir) / RECORDED_FILE
    if explicit or os.environ.get("CODETEACHER_SETTINGS"):
        settings = read_settings_file(Path(explicit or os.environ["CODETEACHER_SETTINGS"]))
    elif recorded.is_file():
        settings = read_settings_file(recorded, resolve=False)
    elif user_config_file().is_file():
        settings = read_settings_file(user_config_file())
    else:
        settings = Settings()
    library = Path(settings.papers.library).expanduser()
    if not library.is_absolute():
        source = settings.source
        settings = settings.model_copy(update={"papers": settings.papers.model_copy(
            update={"library": str(Path(index_dir).absolute().parent / library.name)})})
        settings._source = source
    return settings

