"""A scripted backend for unit tests and deterministic CLI wiring tests — chosen only by name.

`ScriptedBackend(settings, responder)` answers each request with `responder(request)`; a string
responder list is consumed in order. `ScriptedBackend.from_script(settings, path)` (the spec
`scripted:<script.json>`) reads a list of rules `{"match": "<regex>", "reply": "..."}`: the first
rule whose regex is found in the requested JSON schema (if any), the last user message or a
system message answers; no match is an
error naming the request. Nothing ever falls back to this backend. A `latency_s` option
(`BackendSettings.options`) makes each answer take that many seconds (benchmarks, fault tests).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path

from skillsleep.core.models.backends.base import Backend, BackendSettings, BaseBackend, ProviderInfo
from skillsleep.core.models.ledger import Price
from skillsleep.core.shared.errors import BackendError, ConfigError
from skillsleep.core.shared.records import Completion, CompletionRequest, Usage

Responder = Callable[[CompletionRequest], str]


def load_rules(path: Path) -> list[tuple[re.Pattern[str], str]]:
    """Read and compile a script file: a JSON list of {"match": regex, "reply": text}."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the scripted backend's script {path}: {exc}") from exc
    if not isinstance(data, list):
        raise ConfigError(f'{path} must hold a JSON list of {{"match": regex, "reply": text}} rules')
    rules: list[tuple[re.Pattern[str], str]] = []
    for i, rule in enumerate(data):
        if not (isinstance(rule, dict) and isinstance(rule.get("match"), str) and isinstance(rule.get("reply"), str)):
            raise ConfigError(f'{path}: rule {i} must be {{"match": "<regex>", "reply": "<text>"}}, got {rule!r}')
        try:
            rules.append((re.compile(rule["match"]), rule["reply"]))
        except re.error as exc:
            raise ConfigError(f"{path}: rule {i} has a bad regex {rule['match']!r}: {exc}") from exc
    return rules


def rule_responder(rules: list[tuple[re.Pattern[str], str]], source: str) -> Responder:
    """A responder answering with the first rule found in the last user message or the system."""

    def respond(request: CompletionRequest) -> str:
        users = [m.content for m in request.messages if m.role == "user"]
        last_user = users[-1] if users else ""
        system = "\n".join(m.content for m in request.messages if m.role == "system")
        schema = json.dumps(request.json_schema) if request.json_schema else ""
        for pattern, reply in rules:
            if pattern.search(schema) or pattern.search(last_user) or pattern.search(system):
                return reply
        raise BackendError(
            f"no rule in {source} matches the request (last user message: {last_user[:120]!r}); add a rule for it"
        )

    return respond


class ScriptedBackend(BaseBackend):
    """Deterministic answers from a Python function, a list or a script file; counts requests."""

    name = "scripted"
    info = ProviderInfo(
        name="scripted",
        description="deterministic scripted answers, for tests and wiring checks only",
        how_to_configure="use scripted:<script.json> explicitly; never chosen automatically",
        prices={"*": Price()},  # no model at all: free by definition
    )

    def __init__(self, settings: BackendSettings, responder: Responder | list[str]) -> None:
        super().__init__(settings)
        self.requests: list[CompletionRequest] = []
        if isinstance(responder, list):
            queue = list(responder)

            def pop(_: CompletionRequest) -> str:
                if not queue:
                    raise BackendError("the scripted backend ran out of answers")
                return queue.pop(0)

            self._responder: Responder = pop
        else:
            self._responder = responder

    @classmethod
    def from_script(cls, settings: BackendSettings, path: str | Path) -> ScriptedBackend:
        """A backend answering from the rules in a JSON script file."""
        return cls(settings, rule_responder(load_rules(Path(path)), str(path)))

    @classmethod
    def create(cls, settings: BackendSettings) -> Backend:
        """`scripted:<script.json>`: the model is the script file."""
        return cls.from_script(settings, settings.model)

    @classmethod
    def check(cls, settings: BackendSettings) -> tuple[bool, str] | None:
        return True, "always available, chosen only by name: scripted:<script.json>"

    async def _send(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        delay = float(self.settings.options.get("latency_s", 0.0))
        if delay > 0:
            await asyncio.sleep(delay)
        text = self._responder(request)
        chars_in = sum(len(m.content) for m in request.messages)
        usage = Usage(input_tokens=max(1, chars_in // 4), output_tokens=max(1, len(text) // 4))
        return Completion(text=text, usage=usage, finish_reason="stop", model=request.model)
