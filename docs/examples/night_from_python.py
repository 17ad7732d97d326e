"""One night of the sleep cycle from Python: the sessions of chat.jsonl → a proposal for SKILL.md (`scripted:` models)."""

import asyncio
from pathlib import Path

from skillsleep.core.models.store import Store
from skillsleep.core.night.cycle import run_night
from skillsleep.core.night.deps import NightDeps
from skillsleep.core.night.nights import Nights
from skillsleep.core.night.user_config import SleepSection
from skillsleep.core.report.proposals import Proposals
from skillsleep.core.train.harness import HarnessChoice as Choice
from skillsleep.harnesses import chat, chat_logs, skills

data, store = Path("data"), Store(Path("data/state.db"))
for session in chat_logs.parse_chat_log(Path("chat.jsonl").read_bytes(), source="chat.jsonl").sessions:
    store.put_session(session)  # what a harvest stores, redacted (core/harvest/harvester.py)
chat_harness = lambda models: Choice(harness=chat.ChatHarness(models.target), label="chat", timeout_s=60)  # noqa: E731
deps = NightDeps(nights=Nights(data), proposals=Proposals(data), store=store, open_harness=chat_harness)
settings = SleepSection(backend="scripted", optimizer_model="opt.json", target_model="target.json", since="3650d")
skill = skills.SkillTarget(path=Path("SKILL.md").resolve(), name="replies", harness="chat")
print(asyncio.run(run_night(settings, skill, deps)).model_dump_json(indent=2))
