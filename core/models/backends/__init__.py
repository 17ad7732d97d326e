"""LLM backends behind one protocol (`base.Backend`), one module each: the built-in providers are
the lines of `builtin.BUILT_IN`, found by name in `registry` (`provider:model` specs), each with its
record (`ProviderInfo`: what it needs, its models, its key's variable, its prices).

Vendor SDKs are imported lazily inside each backend, and this package's own import loads nothing,
so a command's help can name the providers (`builtin`) without loading a backend.
"""
