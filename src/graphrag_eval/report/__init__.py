"""Presenting results: the terminal summary (:mod:`.console`)."""
