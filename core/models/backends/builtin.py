"""The built-in providers, one line each: its name → "module:Class" of its backend (a `BaseBackend`
whose `info` is the provider's record: what it needs, its models and default model, the variables
of its key and server, its prices). A new built-in provider is its module beside this one and one
line here. This module imports nothing, so a command's help names the providers without loading a
backend (slash_commands/choices.py)."""

from __future__ import annotations

__all__ = ["BUILT_IN"]

_HERE = "skillsleep.core.models.backends"

BUILT_IN: dict[str, str] = {
    "deepseek": f"{_HERE}.deepseek:DeepSeekBackend",
    "openai": f"{_HERE}.openai_compat:OpenAIBackend",
    "anthropic": f"{_HERE}.anthropic:AnthropicBackend",
    "ollama": f"{_HERE}.ollama:OllamaBackend",
    "local": f"{_HERE}.local:LocalBackend",
    "scripted": f"{_HERE}.scripted:ScriptedBackend",  # for tests: chosen only as scripted:<script.json>
}
