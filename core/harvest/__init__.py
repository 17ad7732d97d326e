"""Harvest: agents' transcript files found, read (in worker processes when large), redacted and merged
into the store's sessions, with cursors so each byte is read once.
"""
