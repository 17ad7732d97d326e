"""One night (`skillsleep run`): `run_night()` in `cycle.py` — settings, resume or begin, plan, train,
report, stage, auto-adopt, the skill's memory and the night's record; the lock and `doctor`.
"""
