"""The worker service contract. Regenerate the modules with `python -m bgbench.protos.generate`."""

PROTOCOL_VERSION = 3
