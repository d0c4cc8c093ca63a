"""L3: convert L2 demonstrations into a GR00T LeRobot (v2.1) dataset.

Flow: a reader (``l3.readers``) yields :class:`l3.episode.Episode` objects described by a mapping
(``l3.mapping``, YAML in ``config/``); :mod:`l3.writer` writes parquet + meta, :mod:`l3.video`
encodes cameras, :mod:`l3.stats` aggregates statistics, :mod:`l3.validate` checks the result and
:mod:`l3.convert` wires it all into a CLI.
"""
