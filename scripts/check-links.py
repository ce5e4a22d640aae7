#!/usr/bin/env python3
"""Check the relative links of the repository's Markdown (run by `make lint`).

Every relative link and image in README.md, ARCHITECTURE.md, CHANGELOG.md,
docs/**/*.md and clients/**/README.md must name a file or directory that
exists; a link to a heading of a Markdown file (`page.md#heading`, or
`#heading` in the same page) must name a heading that page has (GitHub's
anchors: lower case, punctuation dropped, spaces as hyphens). Links to other
sites are not fetched. Fenced code blocks and inline code are skipped.

usage: scripts/check-links.py [ROOT]      exits 1 and lists every dead link
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(?:.|\n)*?\1")


def markdown_files(root: Path) -> list[Path]:
    files = [root / n for n in ("README.md", "ARCHITECTURE.md", "CHANGELOG.md")]
    files += sorted((root / "docs").rglob("*.md"))
    files += sorted((root / "clients").glob("**/README.md"))
    skip = {"node_modules", ".venv", "venv", "target", "dist", "build"}
    return [f for f in files if f.is_file() and not skip & set(f.relative_to(root).parts)]


def prose(text: str) -> str:
    """The text outside fenced code blocks, with inline code blanked."""
    out, fenced = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else line)
    return INLINE_CODE.sub(lambda m: " " * len(m.group(0)), "\n".join(out))


def slug(heading: str) -> str:
    heading = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    heading = heading.strip().lower().replace("`", "")
    heading = re.sub(r"[^\w\- ]", "", heading)
    return heading.replace(" ", "-")


def anchors(path: Path, cache: dict) -> set:
    if path not in cache:
        seen: dict = {}
        found = set()
        for line in prose(path.read_text(encoding="utf-8")).split("\n"):
            m = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
        found |= set(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", path.read_text(encoding="utf-8")))
        cache[path] = found
    return cache[path]


def targets(text: str) -> list[str]:
    body = prose(text)
    found = [m.group(1) for m in LINK.finditer(body)]
    found += [m.group(1) for line in body.split("\n") if (m := REF_DEF.match(line))]
    return found


def check(root: Path) -> list[str]:
    dead, cache = [], {}
    for md in markdown_files(root):
        for target in targets(md.read_text(encoding="utf-8")):
            if SCHEME.match(target):
                continue  # another site, or mailto:
            path, _, anchor = target.partition("#")
            dest = (md.parent / path).resolve() if path else md
            where = md.relative_to(root)
            if not dest.exists():
                dead.append(f"{where}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and dest.is_file():
                if anchor.lower() not in anchors(dest, cache):
                    dead.append(f"{where}: {target} (no such heading)")
    return dead


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
    dead = check(root)
    for d in dead:
        print(f"dead link: {d}", file=sys.stderr)
    checked = len(markdown_files(root))
    if dead:
        print(f"check-links: {len(dead)} dead link(s) in {checked} files", file=sys.stderr)
        return 1
    print(f"check-links: no dead relative link in {checked} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
