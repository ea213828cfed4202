"""Write HTML pages as WARC response records: for the bundled sample, benchmarks and tests."""
from __future__ import annotations

import io
from typing import Iterable

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter


def write_html_warc(path: str, pages: Iterable[tuple[str, bytes, str]], gzip: bool = True) -> int:
    """`pages` are (url, html bytes, WARC-Date); returns the number of records written."""
    n = 0
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=gzip)
        for url, html, date in pages:
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                               ("Content-Length", str(len(html)))], protocol="HTTP/1.1")
            record = writer.create_warc_record(url, "response", payload=io.BytesIO(html),
                                               http_headers=http, warc_headers_dict={"WARC-Date": date})
            writer.write_record(record)
            n += 1
    return n
