"""What cron or a systemd timer runs: `run_sleep_cron.sh` and the unit templates (data, no code).

`skillsleep schedule` (slash_commands/scheduling.py) finds them here with importlib.resources;
they only ever call `skillsleep` verbs.
"""
