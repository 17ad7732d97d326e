"""The records every layer shares: model requests and replies, tasks, runs, edits, sessions, the typed
events, every error raised on purpose, and the few helpers they need (JSONL reading, settings messages,
untrusted text shown safely). Imports nothing else of core.
"""
