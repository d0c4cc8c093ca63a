"""l2.format.atomic: outputs replaced whole (a temp beside the target, flushed, renamed)."""

from __future__ import annotations

import os
import shutil

import pytest

from l2.format import atomic


def test_write_text_replaces_whole_and_leaves_nothing(tmp_path):
    target = tmp_path / "sub" / "page.html"
    atomic.write_text(target, "one")
    atomic.write_text(target, "two")
    assert target.read_text() == "two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["page.html"]
    with pytest.raises(FileExistsError, match="exists"):
        atomic.write_text(target, "three", overwrite=False)
    assert target.read_text() == "two" and sorted(p.name for p in target.parent.iterdir()) == ["page.html"]


def test_a_failed_write_leaves_the_old_target(tmp_path):
    target = tmp_path / "merged.hdf5"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic.replacing(target) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".merged.hdf5.")
        tmp.write_bytes(b"half")
        raise RuntimeError("killed mid-write")
    assert target.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["merged.hdf5"]


def test_a_folder_replaces_a_folder_or_a_file(tmp_path):
    target = tmp_path / "dataset"
    for old in ("folder", "file"):
        if old == "folder":
            (target / "meta").mkdir(parents=True)
            (target / "meta" / "info.json").write_text("{}")
        else:
            target.write_text("a file where the dataset goes")
        with atomic.replacing(target) as tmp:
            (tmp / "data").mkdir(parents=True)
            (tmp / "data" / "episode_000000.parquet").write_bytes(b"PAR1")
        assert sorted(str(p.relative_to(target)) for p in target.rglob("*")) == ["data", "data/episode_000000.parquet"]
        assert sorted(os.listdir(tmp_path)) == ["dataset"]  # the old one moved aside and removed
        shutil.rmtree(target)
