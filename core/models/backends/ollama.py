"""An Ollama server through the `ollama` Python client's `/api/chat` (imported lazily).

Structured replies pass the JSON schema as `format`; temperature, seed and the token limit
(`num_predict`) go in `options`; a reply cut at `num_predict` reports `done_reason="length"`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from skillsleep.core.models.backends.base import BackendSettings, ClientBackend, ProviderInfo, import_sdk, shown_url
from skillsleep.core.models.backends.openai_compat import connection_error, sdk_timeout, status_error
from skillsleep.core.shared.errors import BackendError, BackendUnavailable, TransientError
from skillsleep.core.shared.records import Completion, CompletionRequest, Usage

if TYPE_CHECKING:
    import ollama

DEFAULT_HOST = "http://127.0.0.1:11434"


class OllamaBackend(ClientBackend["ollama.AsyncClient"]):
    """Chat with a model served by Ollama (or anything speaking its REST API)."""

    name = "ollama"
    info = ProviderInfo(
        name="ollama",
        description="a local or remote Ollama server (/api/chat)",
        base_url_env="OLLAMA_HOST",
        default_base_url=DEFAULT_HOST,
        models=[],  # whatever the server has pulled
        default_model="qwen2.5-coder:0.5b",
        how_to_configure="start `ollama serve` and pull the model; set OLLAMA_HOST or base_url in the config for another host",
    )

    probe_path = "/api/tags"

    def __init__(self, settings: BackendSettings) -> None:
        super().__init__(settings)
        self.endpoint = (settings.base_url or DEFAULT_HOST).rstrip("/")

    def _new_client(self) -> ollama.AsyncClient:
        sdk = import_sdk("ollama", "the ollama client")
        client: ollama.AsyncClient = sdk.AsyncClient(host=self.endpoint, timeout=sdk_timeout(self.settings))
        return client

    def _params(self, request: CompletionRequest) -> dict[str, Any]:
        options: dict[str, Any] = {"temperature": request.temperature, "num_predict": request.max_tokens}
        if request.seed is not None:
            options["seed"] = request.seed
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "options": options,
            "stream": False,
        }
        if request.json_schema is not None:
            params["format"] = request.json_schema
        return params

    async def _send(self, request: CompletionRequest) -> Completion:
        sdk = import_sdk("ollama", "the ollama client")
        import httpx  # the ollama client's transport

        url = shown_url(f"{self.endpoint}/api/chat")  # for messages: the client has the host
        try:
            response = await self._get_client().chat(**self._params(request))
        except sdk.ResponseError as exc:
            if exc.status_code == -1:  # an error reported inside a 200 body
                raise BackendError(f"{url} reported an error: {exc.error}") from exc
            if exc.status_code == 404:
                raise BackendUnavailable(
                    f"{url} does not have model {self.model!r} ({exc.error}): run `ollama pull {self.model}`"
                ) from exc
            raise status_error(
                url,
                exc.status_code,
                str(exc.error),
                headers=None,
                key_hint="Check the server's access settings.",
                model=self.model,
            ) from exc
        except ConnectionError as exc:  # the client's wording for httpx.ConnectError
            raise TransientError(f"could not connect to {url}; is `ollama serve` running there?") from exc
        except httpx.TimeoutException as exc:
            raise TransientError(f"no answer from {url} within {self.settings.retry.timeout_s:g} s") from exc
        except httpx.TransportError as exc:
            raise connection_error(url, exc) from exc
        except (json.JSONDecodeError, ValueError) as exc:  # a 200 whose body is not a chat response
            raise TransientError(f"{url} sent a body that is not a valid chat response: {exc}") from exc
        done_reason = response.done_reason or ("stop" if response.done else None)
        return Completion(
            text=response.message.content or "",
            usage=Usage(
                input_tokens=int(response.prompt_eval_count or 0),
                output_tokens=int(response.eval_count or 0),
            ),
            finish_reason="length" if done_reason == "length" else done_reason,
            raw_id=None,
            model=response.model or self.model,
        )
