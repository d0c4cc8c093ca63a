"""L3: convert L2 demonstrations into a GR00T LeRobot (v2.1) dataset.

Flow, one way: a reader (``l3.readers``, one per input format) scans its inputs and yields
:class:`l3.episode.Episode` objects described by a mapping (``l3.mapping``, YAML in ``config/``);
:mod:`l3.writer` numbers the episodes and writes them (parquet, :mod:`l3.video` for the cameras,
:mod:`l3.stats` for the statistics) and ``meta/`` in the layout :mod:`l3.layout` describes;
:mod:`l3.validate` checks the result against that layout and :mod:`l3.card` writes its README.md (the dataset card).
:mod:`l3.convert` wires it all into a CLI.
"""
