"""Turn configuration plus the environment into engine objects.

This is the one place settings are read from the environment: `SKILLSLEEP_HOME`, `SKILLSLEEP_CONFIG`,
`SKILLSLEEP_CHAT_DIRS`, `SKILLSLEEP_REDACT_PATTERNS`, `SKILLSLEEP_<KEY>` of `[sleep]`, each provider's key
and base-URL variables, and (through local_threads.py) `SKILLSLEEP_LOCAL_THREADS`. Other modules of the
command and harness layers read only `HOME`, `PATH`, the XDG and agents' folder variables, or pass the
environment on to a process they start (`schedule` also names the settings its night will not see, an
agent's replay checks that its key variable is set); core reads none (tests/test_architecture.py).

Paths: `SKILLSLEEP_HOME` overrides every state path (state.db, model cache, chat-logs/,
config.toml); otherwise the platform's user data / cache / config directories are used.

The user's config file is, first match wins: `$SKILLSLEEP_CONFIG`, `$SKILLSLEEP_HOME/config.toml`,
`platformdirs.user_config_dir("skillsleep")/config.toml`. Its settings layer as flag > env >
file > default (`effective_settings()` says how each list combines; `sleep_settings()` layers the
scalar `[sleep]` settings of `skillsleep run`, env `SKILLSLEEP_<KEY>`, flag `--<key>`).
"""

from __future__ import annotations

import os
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import platformdirs

from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.shared.errors import ConfigError, UnknownNameError
from skillsleep.slash_commands.local_threads import local_options
from skillsleep.slash_commands.setting_records import SLEEP_ORIGINS, SleepOrigin
from skillsleep.slash_commands.setting_records import ConfigFile as ConfigFile
from skillsleep.slash_commands.setting_records import EffectiveSettings as EffectiveSettings
from skillsleep.slash_commands.setting_records import HarvestSettings as HarvestSettings
from skillsleep.slash_commands.setting_records import ScalarSetting as ScalarSetting
from skillsleep.slash_commands.setting_records import SleepSettings as SleepSettings

if TYPE_CHECKING:
    from skillsleep.core.models.backends.base import BackendSettings, ProviderInfo
    from skillsleep.core.models.model_set import ModelSection
    from skillsleep.core.night.user_config import UserConfig
    from skillsleep.harnesses.agent_cli import AgentSettings
    from skillsleep.harnesses.default_agent import AgentLevel


def data_dir() -> Path:
    home = os.environ.get("SKILLSLEEP_HOME")
    return Path(home) if home else Path(platformdirs.user_data_dir("skillsleep"))


def check_data_dir(*, write: bool = True) -> Path:
    """The data folder, when this user can use it: a folder it can read and write, or one it can
    create (nothing is created here); with `write=False` (the verbs that only read) a folder it can
    read, or none at all. Else a ConfigError naming the folder, what set it and the fix."""
    path = data_dir().absolute()
    who = (
        "SKILLSLEEP_HOME"
        if os.environ.get("SKILLSLEEP_HOME")
        else "the platform's data folder; set SKILLSLEEP_HOME to use another"
    )
    what = f"the skillsleep data folder {path} ({who})"
    fix = "point SKILLSLEEP_HOME at a folder you can write to"
    if path.is_dir():
        if not os.access(path, os.R_OK | os.X_OK | (os.W_OK if write else 0)):
            if write and os.statvfs(path).f_flag & os.ST_RDONLY:  # e.g. an agent's sandbox (Codex) mounts it read-only
                raise ConfigError(
                    f"{what} is on a read-only file system here (an agent's sandbox makes it so): run "
                    f"this with permission to write there, or {fix}"
                )
            able, bits = ("writable", "rwx") if write else ("readable", "rx")
            raise ConfigError(f"{what} is not {able} by this user; fix its permissions (chmod u+{bits}), or {fix}")
        return path
    if path.exists() or path.is_symlink():
        kind = "a file" if path.is_file() else "a broken link" if not path.exists() else "a pipe, socket or device"
        raise ConfigError(f"{what} is {kind}, not a folder; {fix}, or move {path} away")
    parent = next(p for p in path.parents if p.exists())
    if not parent.is_dir():
        raise ConfigError(f"{what} cannot be created: {parent} is a file; {fix}")
    if write and not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} cannot be created: {parent} is not writable by this user; {fix}")
    return path


def cache_dir() -> Path:
    home = os.environ.get("SKILLSLEEP_HOME")
    return Path(home) / "cache" if home else Path(platformdirs.user_cache_dir("skillsleep"))


def state_db() -> Path:
    return data_dir() / "state.db"


def chat_log_dir() -> Path:
    """Where skillsleep logs its own direct-chat episodes (never harvested: it is in data_dir())."""
    return data_dir() / "chat-logs"


def backend_settings(provider: str, model: str) -> BackendSettings:
    """Settings for a provider outside a run (`skillsleep backends`): key and base URL from the environment."""
    from skillsleep.core.models.backends.base import BackendSettings
    from skillsleep.core.models.backends.registry import provider_infos
    from skillsleep.harnesses.providers import register_providers

    register_providers()
    infos = {i.name: i for i in provider_infos()}
    if provider not in infos:
        raise UnknownNameError("provider", provider, list(infos))
    key, base_url = _from_env(infos[provider])
    return BackendSettings(
        model=model,
        api_key=key,
        base_url=base_url or infos[provider].default_base_url,
        options=_backend_options(provider),
    )


def model_settings(section: ModelSection) -> BackendSettings:
    """Settings for a `[target]` / `[optimizer]` / `[judge]` section's backend: the section's, with
    its provider's key and base URL from the environment (the section's `base_url` first). What the
    commands give `Models` as `settings_for`."""
    from skillsleep.core.models.backends.registry import get_provider, parse_spec
    from skillsleep.core.models.model_set import section_settings
    from skillsleep.harnesses.providers import register_providers

    register_providers()
    provider = parse_spec(section.backend)[0]
    key, base_url = _from_env(get_provider(provider).info)
    return section_settings(section, api_key=key, base_url=base_url, options=_backend_options(provider))


def _from_env(info: ProviderInfo) -> tuple[str | None, str | None]:
    """A provider's API key and base URL from its environment variables (None where unset)."""
    key = os.environ.get(info.key_env) if info.key_env else None
    return key, (os.environ.get(info.base_url_env) or None) if info.base_url_env else None


def _backend_options(provider: str) -> dict[str, str | int | float | bool]:
    from skillsleep.harnesses.providers import provider_names

    agent = harness_settings().get(provider) if provider in provider_names() else None  # `claude-code`, `codex`
    command = {"command": agent.command} if agent is not None and agent.command else {}  # its CLI's path
    return {"cache_dir": str(cache_dir()), **local_options(provider), **command}


# --- the user's config file and the settings layered over it ------------------------------------

CONFIG_ENV = "SKILLSLEEP_CONFIG"
CHAT_DIRS_ENV = "SKILLSLEEP_CHAT_DIRS"  # os.pathsep-separated folders
REDACT_PATTERNS_ENV = "SKILLSLEEP_REDACT_PATTERNS"  # one regex per line (a newline is never part of one)


def config_file() -> ConfigFile:
    """`$SKILLSLEEP_CONFIG`, else `$SKILLSLEEP_HOME/config.toml`, else
    `platformdirs.user_config_dir("skillsleep")/config.toml` (the first that is set wins)."""
    from skillsleep.core.document.textfile import user_path

    explicit = os.environ.get(CONFIG_ENV)
    home = os.environ.get("SKILLSLEEP_HOME")
    if explicit:
        return _config_file(user_path(explicit, CONFIG_ENV).absolute(), "SKILLSLEEP_CONFIG")
    if home:
        return _config_file(user_path(home, "SKILLSLEEP_HOME").absolute() / "config.toml", "SKILLSLEEP_HOME")
    return _config_file(Path(platformdirs.user_config_dir("skillsleep")) / "config.toml", "default")


def _config_file(path: Path, chosen_by: Literal["SKILLSLEEP_CONFIG", "SKILLSLEEP_HOME", "default"]) -> ConfigFile:
    return ConfigFile(path=path, exists=path.exists(), chosen_by=chosen_by)  # a folder there is an error, not "none"


def user_config(where: ConfigFile | None = None) -> UserConfig:
    """The validated config file; all defaults when it does not exist. A path named by
    SKILLSLEEP_CONFIG that does not exist is an error (a typo would otherwise go unnoticed)."""
    from skillsleep.core.document.textfile import read_text_file
    from skillsleep.core.night.user_config import UserConfig

    where = where or config_file()
    if not where.exists:
        if where.chosen_by == "SKILLSLEEP_CONFIG":
            raise ConfigError(f"{CONFIG_ENV}={where.path} does not exist: create that file or unset {CONFIG_ENV}")
        return UserConfig()
    return parse_user_config(read_text_file(where.path, "config file", instead="a TOML settings file"), where.path)


def parse_user_config(text: str, path: Path) -> UserConfig:
    """The config file's text validated, `[sleep] harness` against the registry's harness names."""
    from skillsleep.core.night.user_config import parse_user_config as _parse_schema
    from skillsleep.harnesses import registry

    return _parse_schema(text, path, harnesses=registry.names())


def effective_settings(
    chat_dirs: Sequence[Path | str] = (),
    redact_patterns: Sequence[str] = (),
    *,
    strict_file: bool = True,
) -> EffectiveSettings:
    """Every setting of the config file layered flag > env > file > default; the arguments are
    the command-line flags that map to settings (empty: the flag was not given).

    `[harvest]`:
    `chat_dirs` replace: the highest level that names any folder decides (a `--chat-dir` means
    "these folders", not "these too"). `redact_patterns` extend: patterns from the file, the
    environment and the flags are all applied, so a flag can never switch a configured redaction
    off. Empty environment variables count as unset. Relative folders from a flag or the
    environment are relative to the current directory; from the file, to the file's folder.
    `strict_file=False` (for `skillsleep config`) treats a missing SKILLSLEEP_CONFIG file as empty.
    """
    from skillsleep.core.document.textfile import user_path
    from skillsleep.core.night.user_config import UserConfig, check_redact_pattern, layer

    where = config_file()
    cfg = UserConfig() if not strict_file and not where.exists else user_config(where)
    env_dirs = [
        str(user_path(d, CHAT_DIRS_ENV).resolve()) for d in os.environ.get(CHAT_DIRS_ENV, "").split(os.pathsep) if d
    ]
    env_patterns = [p for p in os.environ.get(REDACT_PATTERNS_ENV, "").splitlines() if p]
    problems = [f"{REDACT_PATTERNS_ENV}: {p}" for p in map(check_redact_pattern, env_patterns) if p]
    problems += [f"--redact-pattern: {p}" for p in map(check_redact_pattern, redact_patterns) if p]
    if problems:
        raise ConfigError("\n".join(problems))
    flag_dirs = [str(user_path(str(d), "--chat-dir").resolve()) for d in chat_dirs]
    harvest = HarvestSettings(
        chat_dirs=layer("replace", {"flag": flag_dirs, "env": env_dirs, "file": cfg.harvest.chat_dirs}),
        redact_patterns=layer(
            "extend", {"flag": list(redact_patterns), "env": env_patterns, "file": cfg.harvest.redact_patterns}
        ),
    )
    sleep = sleep_settings(cfg=cfg)
    return EffectiveSettings(config_file=where, harvest=harvest, sleep=sleep.settings, agent=sleep.agent)


# --- [sleep]: the scalar settings of the nightly cycle ------------------------------------------

SLEEP_ENVS: dict[str, str] = {key: f"SKILLSLEEP_{key.upper()}" for key in SleepSection.model_fields}
SLEEP_FLAGS: dict[str, str] = {key: "--" + key.replace("_", "-") for key in SleepSection.model_fields}


def sleep_settings(
    flags: Mapping[str, object | None] = types.MappingProxyType({}), cfg: UserConfig | None = None
) -> SleepSettings:
    """The `[sleep]` settings layered flag > env > file > agent > default, validated by `SleepSection`.

    `flags` maps keys of `[sleep]` to the command-line value (None: the flag was not given); an
    unknown key is a programming error (ValueError). The environment is `SLEEP_ENVS[key]`
    (`SKILLSLEEP_ROLLOUTS_K`, …; empty counts as unset), parsed to the key's type (bools accept
    1/0/true/false/yes/no/on/off in any case). The file counts only for keys it sets. The agent
    level is the agent a night defaults to (`night_agent()`, harnesses/default_agent.py): its
    harness and backend, and the token cap of a night whose model is an agent. A bad value
    is a ConfigError naming where it came from: the env var and its text, the flag, or the file
    and key. `cfg` defaults to the user's config file (`user_config()`)."""
    from pydantic import ValidationError

    from skillsleep.slash_commands.setting_text import named_choices

    unknown = [k for k in flags if k not in SleepSection.model_fields]
    if unknown:
        raise ValueError(f"unknown [sleep] key(s) {unknown} in flags (known: {', '.join(SleepSection.model_fields)})")
    where = config_file()
    cfg = cfg if cfg is not None else user_config(where)
    given, problems, unreadable = _sleep_levels(flags, cfg)
    agent = _agent_level(given)  # before any agent level is in `given`: only explicit levels there
    sources: dict[str, SleepOrigin] = {
        key: next((o for o in SLEEP_ORIGINS if o in levels), "default") for key, levels in given.items()
    }
    chosen = {key: given[key][o] for key, o in sources.items() if o != "default" and key not in unreadable}
    try:
        values = SleepSection.model_validate(chosen, context={"harnesses": named_choices("harness")})
    except ValidationError as exc:
        problems += dict.fromkeys(_sleep_problem(err, sources, where) for err in exc.errors(include_url=False))
    if problems:
        raise ConfigError("\n".join(problems))
    settings = {
        key: ScalarSetting(value=getattr(values, key), source=sources[key], layers=levels)
        for key, levels in given.items()
    }
    return SleepSettings(values=values, settings=settings, agent=agent)


def _sleep_levels(
    flags: Mapping[str, object | None], cfg: UserConfig
) -> tuple[dict[str, dict[SleepOrigin, Any]], list[str], set[str]]:
    """Each `[sleep]` key's value at each explicit level that set it (flag, env, file), the problems
    of the flag and env texts that are not of the key's type, and those keys."""
    from skillsleep.slash_commands.setting_text import expected, from_text, is_text_typed

    file_set = cfg.sleep.model_fields_set
    given: dict[str, dict[SleepOrigin, Any]] = {}
    problems: list[str] = []
    unreadable: set[str] = set()  # keys whose flag or env text is not of the key's type
    for key in SleepSection.model_fields:
        levels: dict[SleepOrigin, Any] = given.setdefault(key, {})
        flag = flags.get(key)
        if isinstance(flag, str) and not is_text_typed(key):
            try:
                flag = from_text(key, flag)
            except ValueError:
                problems.append(f"{SLEEP_FLAGS[key]} {flag!r}: expected {expected(key)}")
                unreadable.add(key)
        if flag is not None:
            levels["flag"] = flag
        if text := os.environ.get(SLEEP_ENVS[key], ""):
            try:
                levels["env"] = from_text(key, text)
            except ValueError:
                problems.append(f"{SLEEP_ENVS[key]}={text!r}: expected {expected(key)}")
                unreadable.add(key)
        if key in file_set:
            levels["file"] = getattr(cfg.sleep, key)
    return given, problems, unreadable


def _agent_level(given: dict[str, dict[SleepOrigin, Any]]) -> AgentLevel:
    """The agent level of `harness`, `backend` and `budget_tokens`, under the explicit levels of
    `given` (harnesses/default_agent.py `agent_level()`), added to `given`."""
    from skillsleep.harnesses.default_agent import agent_level
    from skillsleep.slash_commands.night_agent import agent_models, night_agent

    def explicit(key: str) -> str | None:
        return next((str(v) for o in SLEEP_ORIGINS if (v := given[key].get(o)) is not None), None)

    level = agent_level(
        night_agent(data_dir()), agent_models(), harness=explicit("harness"), backend=explicit("backend")
    )
    for key, value in level.values.items():
        given[key]["agent"] = value
    return level


def _sleep_problem(err: Any, sources: Mapping[str, SleepOrigin], where: ConfigFile) -> str:
    """One pydantic error of the layered `[sleep]` values, named by the level that gave the value."""
    from skillsleep.slash_commands.setting_text import expected

    key = str(err["loc"][0]) if err["loc"] else ""
    got = err.get("input")
    what = (
        str(err["msg"])
        if err["type"] in ("since_syntax", "base_url_syntax", "skills_value")
        else f"expected {expected(key)}"
    )
    source = sources.get(key, "default")
    if source == "flag":
        return f"{SLEEP_FLAGS[key]} {got!r}: {what}"
    if source == "env":
        return f"{SLEEP_ENVS[key]}={os.environ.get(SLEEP_ENVS[key], '')!r}: {what}"
    if source == "agent":
        return f"[sleep] {key} of the agent a night defaults to: {what}, got {got!r}; set {SLEEP_FLAGS[key]}"
    return f"{where.path}: [sleep] {key}: {what}, got {got!r}"


_FLAGS = {"harvest.chat_dirs": "--chat-dir", "harvest.redact_patterns": "--redact-pattern"}
_FLAGS |= {f"sleep.{key}": flag for key, flag in SLEEP_FLAGS.items()}
_ENVS = {"harvest.chat_dirs": CHAT_DIRS_ENV, "harvest.redact_patterns": REDACT_PATTERNS_ENV}
_ENVS |= {f"sleep.{key}": env for key, env in SLEEP_ENVS.items()}


def origin_label(origin: SleepOrigin, key: str, where: ConfigFile, agent: AgentLevel | None = None) -> str:
    """Where a level of setting `key` ("harvest.chat_dirs", "sleep.rollouts_k") is set, in words:
    `--chat-dir`, `SKILLSLEEP_CHAT_DIRS`, `[harvest] chat_dirs in <file>`, `default`, and for the
    agent level why it gave that (`agent`: the level)."""
    section, _, name = key.rpartition(".")
    if origin == "agent":
        return agent.why.get(name, "the agent a night defaults to") if agent is not None else "the agent level"
    return {
        "flag": _FLAGS.get(key, "a flag"),
        "env": _ENVS.get(key, "the environment"),
        "file": f"[{section}] {name} in {where.path}",
        "default": "default",
    }[origin]


def harness_settings(cfg: UserConfig | None = None) -> dict[str, AgentSettings]:
    """`[harness.<name>]` tables of the config file by agent name, each read into its agent's
    settings model (an unknown harness or key is an error naming the file, never ignored)."""
    from skillsleep.harnesses import registry

    where = config_file()
    cfg = cfg if cfg is not None else user_config(where)
    out: dict[str, AgentSettings] = {}
    for name, table in cfg.harness.items():
        if name not in registry.agent_names():
            known = ", ".join(registry.agent_names())
            raise ConfigError(f"{where.path}: [harness.{name}] is not a harness with settings (known: {known})")
        out[name] = registry.get(name).settings(table, where=f"{where.path}: [harness.{name}]")
    return out
