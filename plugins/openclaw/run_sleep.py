#!/usr/bin/env python3
"""One night by hand, with this plugin's settings (config.json beside this file):
`skillsleep run [RUN FLAGS...]`, e.g. `python3 run_sleep.py --dry-run`."""

from __future__ import annotations

import sys

sys.dont_write_bytecode = True  # no __pycache__ in the plugin folder: uninstall removes what install wrote
from slash_sleep import skillsleep  # noqa: E402 - after the line above

if __name__ == "__main__":
    skillsleep(["run", *sys.argv[1:]])
