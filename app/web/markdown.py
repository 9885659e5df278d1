"""A Markdown section as the page renders it: blocks (heading, paragraph, list item, code, table row)
of plain text, parsed by markdown-it-py. The page builds each block as an element and sets its
text, never HTML, so nothing in a document can run in the page or fetch from elsewhere (no images,
no raw HTML); links are shown as their text."""

from __future__ import annotations

from typing import Any

BLOCK_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "tr"}


def inline_text(token: Any) -> str:
    """An inline token's text without its Markup (``**必須**`` → ``必須``, a line break kept)."""
    parts = []
    for child in token.children or []:
        if child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type == "image":  # its alternative text
            parts.append(inline_text(child))
    return "".join(parts)


def markdown_blocks(text: str) -> list[dict[str, Any]]:
    """``text`` as ``[{"tag": "h2" | "p" | "li" | "pre" | "tr", "text": …, "cells": […] (rows)}]``
    in order; a list item's paragraphs are its text, a table row's cells its ``cells``."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark", {"html": False}).enable("table").parse(text)
    blocks: list[dict[str, Any]] = []
    open_tags: list[str] = []
    for token in tokens:
        if token.nesting == 1:
            open_tags.append(token.tag)
            if token.tag == "tr":
                blocks.append({"tag": "tr", "text": "", "cells": []})
            elif token.tag == "li":
                blocks.append({"tag": "li", "text": ""})
        elif token.nesting == -1:
            open_tags.pop()
        elif token.type in ("fence", "code_block"):
            blocks.append({"tag": "pre", "text": token.content.rstrip("\n")})
        elif token.type == "inline":
            add_inline(blocks, open_tags, inline_text(token))
    return [block for block in blocks if block["text"].strip() or block.get("cells")]


def add_inline(blocks: list[dict[str, Any]], open_tags: list[str], text: str) -> None:
    """Put one inline run where it belongs: a table cell, a list item's text, or a block of its own."""
    if "tr" in open_tags:
        blocks[-1]["cells"].append(text)
        blocks[-1]["text"] = " | ".join(blocks[-1]["cells"])
    elif "li" in open_tags:
        item = next(block for block in reversed(blocks) if block["tag"] == "li")
        item["text"] = f"{item['text']}\n{text}" if item["text"] else text
    else:
        tag = open_tags[-1] if open_tags and open_tags[-1] in BLOCK_TAGS else "p"
        blocks.append({"tag": tag, "text": text})
