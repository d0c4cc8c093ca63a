"""A mapping config file, loaded: read as YAML, parsed (:func:`l3.mapping.mapping_from_dict`), and its ``video:``
options tried with PyAV (:func:`l3.video.option_problem`). What l3/convert.py, ``l2.evaluate --config`` and
``l2.serve --config`` load a config with; above both :mod:`l3.mapping` and :mod:`l3.video`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import yaml

from l3.errors import ConfigError
from l3.mapping import Mapping, mapping_from_dict


def load_mapping(path: str | Path) -> Mapping:
    """Load a YAML mapping file; its ``video:`` options are tried on one tiny frame (:func:`l3.video.option_problem`)
    so that PyAV's refusal comes now, before any output is written. A process without PyAV (a policy server in a
    trainer's venv) encodes no video, and skips that try."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read mapping config ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start})") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: invalid YAML ({str(e).splitlines()[0]})") from None
    except ValueError as e:  # a value YAML's resolver takes for a date that is none, e.g. 2024-13-45
        raise ConfigError(f"{path}: invalid YAML ({e})") from None
    m = mapping_from_dict(doc, str(path))
    if isinstance(doc.get("video"), dict) and doc["video"] and importlib.util.find_spec("av") is not None:
        from l3.video import option_problem  # PyAV: imported only where it is installed

        problem = option_problem(m.video)
        if problem is not None:
            raise ConfigError(f"{path}: video.{problem[0]}: {problem[1]}")
    return m
