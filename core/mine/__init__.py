"""Mining a night's tasks from the user's sessions: requests and how they ended, follow-ups, grouping,
stable task identities, judges written and grounded in the user's words, relevance, splits, dreams.
"""
