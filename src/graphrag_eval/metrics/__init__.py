"""Metrics: the interface and registry (:mod:`.base`) and the built-in metrics."""
