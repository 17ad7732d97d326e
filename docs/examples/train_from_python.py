"""Train a skill from Python, without the command layer: `python train_from_python.py run.toml`.

The run config names the task file, the seed skill and the models (any backend; the test runs it
with `scripted:` ones). Prints the `TrainResult`: what `skillsleep train --json` prints."""

import asyncio
import sys
from pathlib import Path

from skillsleep.core.document.skill import Skill
from skillsleep.core.train.config import load_config
from skillsleep.core.train.run import train
from skillsleep.core.train.tasks import load_tasks
from skillsleep.harnesses.chat import ChatHarness

config = load_config(Path(sys.argv[1]))
tasks = load_tasks(Path(config.data.tasks))
skill = Skill.parse(Path(config.data.skill).read_text(encoding="utf-8"))
# the tasks run on the chat harness: the target model with the skill as its system prompt
result = asyncio.run(train(config, tasks, skill, open_harness=lambda models: ChatHarness(models.target)))
print(result.model_dump_json(indent=2))
