"""The skill document: frontmatter, body, protected regions (markers paired strictly), one `AGENTS.md`
section as a trainable text, new lines styled like their neighbours, line endings kept, files read.
"""
