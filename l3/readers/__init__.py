"""Readers: one per input format, each a :class:`l3.readers.common.Reader` producing
:class:`l3.episode.Episode` objects."""
