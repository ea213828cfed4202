"""quality_models/software_docs.py: documentation pages read as their rendered text, markup gone and code kept."""
import gzip
import json

from quality_models import software_docs as sd

RST = """\
Quickstart
==========

Flask routes a URL to a function. The
:func:`~flask.Flask.route` decorator says which, see `the guide <https://example.org/guide>`_::

    @app.route("/")
    def index():
        return "Hello"

.. versionchanged:: 2.0
    :members:

Run it with ``flask run``.
"""

MD = """\
---
title: Clients
---
# Clients

Use a [Client](api.md#client) when you make **many** requests to one host.
It pools connections.

```python
with httpx.Client() as client:
    r = client.get("https://example.org")
```

{{% note %}} Pools are per host.

* `timeout`: seconds
"""


def test_restructuredtext_reads_as_the_rendered_page():
    text = sd.reflow(sd.rst_text(RST))
    assert text.splitlines() == [
        "Quickstart",
        "Flask routes a URL to a function. The flask.Flask.route decorator says which, see the guide:",
        '@app.route("/")', "def index():", 'return "Hello"',
        "Run it with flask run."]


def test_markdown_reads_as_the_rendered_page():
    text = sd.reflow(sd.markdown_text(MD))
    assert text.splitlines() == [
        "Clients",
        "Use a Client when you make many requests to one host. It pools connections.",
        "with httpx.Client() as client:", 'r = client.get("https://example.org")',
        "Pools are per host.",
        "* timeout: seconds"]


def test_a_docs_folder_becomes_rows_with_attribution(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "quickstart.rst").write_text(RST * 4)
    (docs / "clients.md").write_text(MD * 4)
    (docs / "changes.rst").write_text(RST * 4)           # a changelog is not documentation prose
    (docs / "index.md").write_text("# Home\n")           # nor a stub
    out = tmp_path / "docs.jsonl.gz"
    sd.main(["--source", "encode/httpx", "c0ffee", "BSD-3-Clause", str(tmp_path), "--out", str(out)])
    rows = [json.loads(line) for line in gzip.open(out, "rt")]
    assert [r["id"] for r in rows] == ["encode/httpx/docs/clients.md", "encode/httpx/docs/quickstart.rst"]
    assert rows[0]["url_or_path"] == "https://github.com/encode/httpx/blob/c0ffee/docs/clients.md"
    assert {r["license"] for r in rows} == {"BSD-3-Clause"} and all("```" not in r["text"] for r in rows)
