"""Checks every relative Markdown link of README.md, CONTRIBUTING.md and docs/*.md: the file it names
exists, and its ``#anchor``, if any, is a heading of that page (GitHub's slugs). Links inside code
are not links and are skipped. Prints one line per broken link and a summary; exit status 1 if any.

Run from anywhere: ``python3 docs/tools/check_links.py`` (``make docs-check``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE = re.compile(r"(`+).+?\1", re.S)


def prose(text: str) -> str:
    """The text without fenced blocks and inline code (line count kept)."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return CODE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def slugs(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        if m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line):
            title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).replace("`", "")
            slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def main() -> int:
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    checked = broken = 0
    for page in pages:
        text = prose(page.read_text())
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            checked += 1
            path, _, anchor = target.partition("#")
            dest = (page.parent / unquote(path)).resolve() if path else page
            line = text.count("\n", 0, m.start()) + 1
            where = f"{page.relative_to(ROOT)}:{line}: {target}"
            if not dest.exists():
                print(f"{where}: no such file")
                broken += 1
            elif anchor and dest.suffix == ".md" and anchor not in slugs(dest):
                print(f"{where}: no heading #{anchor} in {dest.relative_to(ROOT)}")
                broken += 1
    print(f"{len(pages)} pages, {checked} relative links checked, {broken} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
