"""The union of two extractors, decided where it can be: on the clean stage's verdict.

With `extract.engine: union` an extracted row carries trafilatura's text in `text` and resiliparse's in
`text_alt` ("Beyond a Single Extractor", arXiv 2602.19548: the pages one filtering pipeline keeps differ a
lot between extractors, and their union keeps more at the same quality). Both texts are cleaned; the row
keeps the first that passes the rules, so a page is still one document with one id, and every row is
still counted once. `engines_passed` records which texts passed, so one run says what each engine alone
would have kept.
"""
from __future__ import annotations

from pipeline.extract.engines import UNION_ORDER


def union_batch(results: list[dict], alts: list[str | None], engines: list[str | None],
                clean) -> tuple[list[dict], list[str | None], list[str | None]]:
    """(results, engines, engines_passed) with each row's chosen text.

    `results` are the clean results of the rows' texts, `alts` their second texts (None where the row has
    one), `engines` the engine of each text, `clean` a function from row positions to the clean results of
    those rows' second texts (pipeline.clean.stage.clean_batch with the identifier, settings and URLs bound). A rejected row whose second
    text also failed keeps the first text's reason, with the second's in `detail`."""
    with_alt = [i for i, a in enumerate(alts) if a]
    alt_results = dict(zip(with_alt, clean(with_alt))) if with_alt else {}
    out, used, passed = [], [], []
    for i, (first, engine) in enumerate(zip(results, engines)):
        second = alt_results.get(i)
        if second is None:  # one text: it is kept or rejected on its own
            out.append(first)
            used.append(engine)
            passed.append(engine if first["reason"] is None and engine else None)
            continue
        alt_engine = next(e for e in UNION_ORDER if e != engine)
        names = [e for e, r in ((engine, first), (alt_engine, second)) if r["reason"] is None]
        passed.append(",".join(names) or None)
        if first["reason"] is None or second["reason"] is not None:
            if first["reason"] is not None:
                first = {**first, "detail": f"{alt_engine} text: {second['reason']}"}
            out.append(first)
            used.append(engine)
        else:
            out.append(second)
            used.append(alt_engine)
    return out, used, passed
