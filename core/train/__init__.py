"""The training loop (`skillsleep train`, and a night's epoch): rollout and scoring (`Evaluator`, judges,
checks), reflect, merge, rank and clip to the learning rate, screen, apply bounded edits, repair, gate,
the epoch boundary (slow update, meta skill), and the run's settings and task files.
"""
