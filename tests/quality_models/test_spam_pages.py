"""The labelled spam page set (quality_models/spam_pages.py): labels readable, split by site, synthetic rules."""
from quality_models import spam_pages as sp


def test_labels_file_is_complete():
    labels = sp._labels()
    assert labels and all(lab in ("spam", "ok", "unclear") for lab, _, _ in labels.values())
    assert all(note for _, _, note in labels.values())
    assert sum(lab == "spam" for lab, _, _ in labels.values()) >= 25


def test_split_is_by_host():
    a = sp.split_of("http://www.example.com/a.html", "k1")
    assert all(sp.split_of(f"http://www.example.com/{i}.html", f"k{i}") == a for i in range(20))
    assert {sp.split_of(f"http://site{i}.com/", "k") for i in range(40)} == {"dev", "held_out"}


def test_synthetic_positives_come_from_dev_pages_only():
    pages = [{"id": f"p{i}", "source": "s", "url": None, "text": "普通的网页内容。\n" * 60, "label": "ok",
              "kind": "-", "note": "", "labelled_by": "source", "split": ("dev", "held_out")[i % 2]}
             for i in range(10)]
    syn = sp.synthetic(pages, ["王者威尼斯人"], 4)
    assert len(syn) == 4 and all(p["split"] == "dev" and p["label"] == "spam" for p in syn)
    assert all("王者威尼斯人" in p["text"] for p in syn)
