r"""The tags that fence untrusted text in a grader's prompt, and their look-alikes.

A prompt shows each untrusted text (a graded answer, a baseline, a question, a context, a
reference) in a block, ``<Response>`` ... ``</Response>``. A text holding a tag of its own could
end its block early, or open a block that looks like another input, and pass what follows for
the package's words. So every tag-like piece of an untrusted text that names one of the blocks
is neutralised (a backslash after its bracket: ``<\/Response>``), whatever its case, spacing,
spelling of the brackets and slash (full-width or angle-quote brackets, a fraction slash),
invisible characters inside (zero-width spaces) or Cyrillic and Greek letters that look Latin.

The same reading finds, in a grader's reply, the blocks it copied from the prompt: whatever a
reply says inside a copied ``<Response>`` block is the answer's words, not the grader's.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["TITLES", "copied_blocks", "neutralise_tags"]

TITLES = (
    "Instruction",
    "Context",
    "Response",
    "Reference response",
    "Response A",
    "Response B",
    "Question",
    "Acceptable answers",
    "Candidate",
)
"""The titles of every block of untrusted text in the package's prompts."""

_OPEN = "<\uff1c\ufe64\u2039\u3008\u27e8\u2329\u276e\u29fc"
_CLOSE = ">\uff1e\ufe65\u203a\u3009\u27e9\u232a\u276f\u29fd"
_SLASHES = "/\uff0f\u2044\u2215\u29f8"
# A bracket, at most 60 characters (a new line too), a closing bracket: bounded work per position.
_TAG = re.compile(f"[{_OPEN}]([^{_OPEN}{_CLOSE}]{{1,60}}?)[{_CLOSE}]")
# Letters that render like Latin ones (Cyrillic, Greek, dotless i), as NFKC leaves them.
_LOOK_ALIKES = str.maketrans(
    "\u0430\u0432\u0441\u0435\u0450\u0451\u04bb\u0456\u0457\u0458\u043a\u043c\u043d\u043e\u0440\u0455\u0442\u0443"
    "\u0445\u0501\u051b\u051d\u044c\u03b1\u03b2\u03b5\u03b7\u03b9\u03ba\u03bd\u03bf\u03c1\u03c4\u03c5\u03c7\u0131",
    "abceeehiijkmhopstyxdqwbabenikvoptuxi",
)
_MIN_NAME = 4
_WINDOW = 200


def _name(text: str) -> str:
    """A tag's name as compared: NFKC, case-folded, look-alike letters mapped, only letters and digits kept."""
    folded = unicodedata.normalize("NFKC", text).casefold().translate(_LOOK_ALIKES)
    return "".join(character for character in folded if character.isalnum())


_NAMES = tuple(_name(title) for title in TITLES)


def _parts(inner: str) -> tuple[bool, bool, str]:
    """(escaped, closing, name) of a tag's inside."""
    stripped = inner.strip()
    escaped = stripped.startswith("\\")
    closing = stripped[:1] in _SLASHES
    return escaped, closing, _name(stripped)


def _names_a_block(name: str) -> bool:
    # A prefix either way: "</Response_A>" and "</Respons>" are as confusing as "</Response>".
    return len(name) >= _MIN_NAME and any(name.startswith(title) or title.startswith(name) for title in _NAMES)


def neutralise_tags(text: str) -> str:
    """``text`` with every tag naming a prompt block neutralised (a backslash after its opening bracket)."""

    def neutral(match: re.Match[str]) -> str:
        escaped, _, name = _parts(match.group(1))
        if escaped or not _names_a_block(name):
            return match.group(0)
        return match.group(0)[0] + "\\" + match.group(0)[1:]

    return _TAG.sub(neutral, text)


def _on_its_own_line(reply: str, match: re.Match[str], closing: bool) -> bool:
    # The prompt puts each tag on a line of its own: a tag named in a sentence ("the <Response> block
    # says") copies nothing. A closing tag need only start its line (a copy may run on after it).
    # Only a window around the tag is looked at, so a line of many tags costs no more than its length.
    start, end = match.start(), match.end()
    before = reply[max(0, start - _WINDOW) : start]
    if ("\n" not in before and start > _WINDOW) or before.rpartition("\n")[2].strip():
        return False
    if closing:
        return True
    after = reply[end : end + _WINDOW]
    if "\n" not in after and end + _WINDOW < len(reply):
        return False
    return not after.partition("\n")[0].strip()


def copied_blocks(reply: str) -> list[tuple[int, int]]:
    """Where ``reply`` copies a prompt block: from its opening tag to its closing tag, or to the end."""
    blocks: list[tuple[int, int]] = []
    inside: tuple[str, int] | None = None
    for match in _TAG.finditer(reply):
        escaped, closing, name = _parts(match.group(1))
        if escaped or name not in _NAMES or not _on_its_own_line(reply, match, closing):
            continue
        if inside is None and not closing:
            inside = (name, match.start())
        elif inside is not None and closing and name == inside[0]:
            blocks.append((inside[1], match.end()))
            inside = None
    if inside is not None:
        blocks.append((inside[1], len(reply)))
    return blocks
