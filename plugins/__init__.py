"""What `skillsleep install` puts into each agent (data, no code): `claude-code/`, `codex/`, `openclaw/`.

The agents' installers (harnesses/*_install.py) find these files with importlib.resources; the
files themselves only ever call `skillsleep` verbs.
"""
