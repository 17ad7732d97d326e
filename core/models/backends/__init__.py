"""LLM backends behind one protocol, found by name in `registry` (`provider:model` specs).

    deepseek    DeepSeek's hosted API (OpenAI-compatible)          deepseek.py
    openai      any OpenAI-compatible /v1 server                    openai_compat.py
    anthropic   Anthropic's Messages API (or a /v1/messages server)  anthropic.py
    ollama      an Ollama server (/api/chat)                        ollama.py
    local       embedded llama.cpp with packaged weights            local.py, weights.py
    scripted    deterministic rules, for tests; only by name        scripted.py

Vendor SDKs are imported lazily inside each backend, so importing this package loads none.
"""

from __future__ import annotations

from skillsleep.core.models.backends.base import Backend, BackendSettings, BaseBackend, ProviderInfo, RetryPolicy

__all__ = ["Backend", "BackendSettings", "BaseBackend", "ProviderInfo", "RetryPolicy"]
