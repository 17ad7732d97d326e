"""The import package `skillsleep` as mypy sees it: links to the folders pyproject.toml maps into it.

Only the type checker reads this tree (`[tool.mypy] mypy_path`); the installed package has no
`skillsleep/__init__.py`. This file makes `skillsleep` a regular package here so that mypy prefers
`core/models/prompts.py` over the data folder `core/models/prompts/`, as Python's import does.
"""
