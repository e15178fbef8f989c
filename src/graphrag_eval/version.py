"""The version of graphrag-eval (read by the build from this file)."""

__version__ = "6.0.0.dev0"
