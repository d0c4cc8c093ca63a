"""Readers: one per input layout, each producing :class:`l3.episode.Episode` objects."""
