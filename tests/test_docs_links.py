"""Every relative link in the README and docs/ leads somewhere: the file exists, and a ``#anchor`` is one of its
headings (GitHub's anchors: lower case, punctuation dropped, spaces to hyphens)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {anchor(m.group(1)) for m in re.finditer(r"^#+\s+(.+?)\s*$", text, re.M)}


def broken_links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{page.name}: {target} (no such file)")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{page.name}: {target} (no such heading in {dest.name})")
    return broken


def test_the_checker_tells_a_broken_link(tmp_path):
    (tmp_path / "a.md").write_text("# Where it lives: `l2/`\n\n[ok](b.md#the-b-page) [gone](c.md) [bad](b.md#nope)\n")
    (tmp_path / "b.md").write_text("## The b page\n[self](#the-b-page) [up](a.md#where-it-lives-l2)\n")
    assert broken_links(tmp_path / "a.md") == ["a.md: c.md (no such file)", "a.md: b.md#nope (no such heading in b.md)"]
    assert broken_links(tmp_path / "b.md") == []


def test_every_relative_link_of_the_docs_leads_somewhere():
    assert len(PAGES) > 20
    assert [line for page in PAGES for line in broken_links(page)] == []
