"""bgbench: rate data stores for interactive social-networking actions (the BG benchmark)."""

__version__ = "0.1.0"
