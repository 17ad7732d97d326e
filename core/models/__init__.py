"""The one model door (`LLM`: budget, cache, single-flight, ledger), the backends by `provider:model`,
the prompts and reply models, prices and spend, the SQLite state store and a run's folder.
"""
