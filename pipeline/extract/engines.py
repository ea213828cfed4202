"""The HTML main-text extractors the extract stage can run, each from decoded HTML to plain text.

trafilatura is the precise one (token F1 0.967 on the AEB articles, about 50 pages/s per core);
resiliparse's main-content mode is 8-12 times cheaper at a few points less F1 (docs/extraction.md has
the measured table). `union` runs both on every page and lets the clean stage keep the first text that
passes its rules (pipeline/clean/union.py): more pages survive, one document per page.

Both libraries are imported where a page is extracted, not here: checking a config imports this module.
"""
from __future__ import annotations

TRAFILATURA = "trafilatura"
RESILIPARSE = "resiliparse"
UNION = "union"
SINGLE_ENGINES = (TRAFILATURA, RESILIPARSE)
ENGINES = SINGLE_ENGINES + (UNION,)
# A union row carries the first engine's text in `text` and the second's in `text_alt` (when the first
# found text); the first is the more precise one, so a page both texts pass keeps trafilatura's.
UNION_ORDER = (TRAFILATURA, RESILIPARSE)


def trafilatura_kwargs(cfg) -> dict:
    """The keyword arguments passed to trafilatura.extract (besides html and url)."""
    return dict(output_format="txt", favor_precision=cfg.favor_precision,
                include_tables=cfg.include_tables, include_comments=cfg.include_comments,
                deduplicate=cfg.deduplicate, include_images=False, include_links=False,
                with_metadata=False)


def resiliparse_kwargs(cfg) -> dict:
    """The keyword arguments passed to resiliparse's extract_plain_text: main content only, one line per
    block (the clean stage works on lines), no link targets, alt texts, form fields or noscript text,
    the same table and comment choices as trafilatura's."""
    return dict(main_content=True, preserve_formatting=True, list_bullets=True, alt_texts=False,
                links=False, form_fields=False, noscript=False, comments=cfg.include_comments,
                skip_elements=None if cfg.include_tables else ["table"])


def trafilatura_text(html: str, url: str | None, cfg) -> str | None:
    import trafilatura

    return trafilatura.extract(html, url=url, **trafilatura_kwargs(cfg))


def resiliparse_text(html: str, url: str | None, cfg) -> str | None:
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, **resiliparse_kwargs(cfg))


EXTRACTORS = {TRAFILATURA: trafilatura_text, RESILIPARSE: resiliparse_text}
