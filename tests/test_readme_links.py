"""The README reads on PyPI as here: every link absolute, every link into the repository naming a file it has."""

from __future__ import annotations

import re

import tomllib

from tests.conftest import ROOT

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _repository() -> str:
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    return str(urls["Source"]).rstrip("/")


def test_every_readme_link_is_absolute_or_an_anchor():
    relative = [
        target
        for target in LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
        if not re.match(r"https?://|#", target)
    ]
    assert relative == []  # PyPI shows the README without the repository: a relative link is dead there


def test_every_link_into_the_repository_names_a_file_or_folder_it_has():
    page = _repository() + "/"
    raw = page.replace("https://github.com/", "https://raw.githubusercontent.com/")  # pictures
    targets = [t for t in LINK.findall((ROOT / "README.md").read_text(encoding="utf-8")) if t.startswith((page, raw))]
    assert len(targets) > 10
    for target in targets:
        inside = target[len(page) :] if target.startswith(page) else target[len(raw) :]
        path = re.sub(r"^((blob|tree)/)?main/", "", inside).split("#")[0]
        assert (ROOT / path).exists(), target


def test_the_project_urls_point_at_one_repository():
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(urls)
    assert all(str(url).startswith(_repository()) for url in urls.values())
