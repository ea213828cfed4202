"""Write HTML pages as WARC response records: for the bundled sample, benchmarks and tests."""
from __future__ import annotations

import io
import uuid
from typing import Iterable

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter


def write_html_warc(path: str, pages: Iterable[tuple[str, bytes, str]], gzip: bool = True,
                    stable_ids: bool = False) -> int:
    """`pages` are (url, html bytes, WARC-Date); returns the number of records written. With `stable_ids` each
    record's WARC-Record-ID is derived from its URL and date instead of drawn at random, so the documents the
    pipeline extracts keep their ids when the file is written again."""
    n = 0
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=gzip)
        for url, html, date in pages:
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                               ("Content-Length", str(len(html)))], protocol="HTTP/1.1")
            headers = {"WARC-Date": date}
            if stable_ids:
                headers["WARC-Record-ID"] = f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'{url} {date}')}>"
            record = writer.create_warc_record(url, "response", payload=io.BytesIO(html),
                                               http_headers=http, warc_headers_dict=headers)
            writer.write_record(record)
            n += 1
    return n
