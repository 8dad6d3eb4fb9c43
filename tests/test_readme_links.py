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


PAGES = sorted((ROOT / "docs").glob("*.md"))


def _slugs(page: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, no punctuation, spaces as hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    slugs = set()
    fenced = False
    for line in page.splitlines():
        fenced ^= line.startswith("```")
        heading = re.match(r"#{1,6} (.*)", line)
        if fenced or not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-")
        slugs.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return slugs


def _links(page: str) -> list[str]:
    prose = re.sub(r"```.*?```", "", page, flags=re.S)  # a link in a code block is code, not a link
    return LINK.findall(re.sub(r"`[^`\n]*`", "", prose))


def test_every_link_of_the_docs_and_developers_pages_resolves():
    page = _repository() + "/"
    for source in [*PAGES, ROOT / "DEVELOPERS.md", ROOT / "README.md"]:
        text = source.read_text(encoding="utf-8")
        for target in _links(text):
            if re.match(r"https?://", target) and not target.startswith(page):
                continue  # another site's page
            inside = re.sub(r"^((blob|tree)/)?main/", "", target[len(page) :]) if target.startswith(page) else None
            path, _, anchor = (inside if inside is not None else target).partition("#")
            base = ROOT if inside is not None else source.parent
            file = (base / path).resolve() if path else source
            assert file.exists(), f"{source.name}: {target}"
            if anchor and file.suffix == ".md":
                assert anchor in _slugs(file.read_text(encoding="utf-8")), f"{source.name}: {target}"


def test_the_docs_index_lists_every_page_of_the_docs():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^- \[([^\]]+)\]\(\1\)", index, flags=re.M))
    assert listed >= {p.name for p in PAGES if p.name != "README.md"}
