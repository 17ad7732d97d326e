"""The agents as model providers: `claude-code[:MODEL]`, `codex[:MODEL]` (harnesses/agent_model.py).

The engine's backend registry (core/models/backends/registry.py) knows no agent; the command line
calls `register_providers()` before it resolves or lists backends, which registers every agent
record's `provider` there. `provider_names()` lists them from the records alone, loading no
backend module (for a command's help)."""

from __future__ import annotations

__all__ = ["provider_names", "register_providers"]


def provider_names() -> tuple[str, ...]:
    """The agents that are model providers, by name (nothing imported but the agent records)."""
    from skillsleep.harnesses import registry

    return tuple(a.name for a in registry.agents() if a.provider)


def register_providers() -> None:
    """Register every agent's model provider in the backend registry (safe to call again)."""
    from skillsleep.core.models.backends import registry as backends
    from skillsleep.harnesses import registry

    for agent in registry.agents():
        if agent.provider and agent.name not in backends.PROVIDERS:
            backends.register(agent.model_provider())
