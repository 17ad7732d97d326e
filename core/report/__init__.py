"""What a night leaves for the user: its result (`NightResult`) rendered as markdown, HTML and JSON; the
staged proposals and the only code that writes a live skill (adopt, reject, rollback), with backups.
"""
