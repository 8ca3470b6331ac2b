"""bgbench: rate data stores for interactive social-networking actions (the BG benchmark).

`__version__` is the one version source: pyproject.toml reads it
(`[tool.setuptools.dynamic]`), so the installed distribution, results records and
the agent's handshake all carry this string.
"""

__version__ = "0.1.0"
