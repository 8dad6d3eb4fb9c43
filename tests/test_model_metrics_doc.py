"""docs/model-based-metrics.md shows every catalogue metric's criteria, scale and prompt as the code has them."""

import sys

from answer_eval.llm.rubric_prompts import catalogue
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))

from model_metrics_doc import PAGE, page_with_catalogue


def test_the_catalogue_part_of_the_page_is_what_the_code_gives():
    page = PAGE.read_text(encoding="utf-8")
    assert page == page_with_catalogue(page), "run: python scripts/model_metrics_doc.py"


def test_every_metric_has_its_section_with_its_scale_and_prompt():
    page = PAGE.read_text(encoding="utf-8")
    for name, rubric in catalogue().items():
        section = page.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        assert all(f"| {r.value} | {r.label} |" in section for r in rubric.scale)
        assert all(c.description in section for c in rubric.criteria)
        assert "{prediction}" in section
        assert ("Pairwise (asked a second time" in section) == rubric.pairwise
