"""The committed Chinese KenLM model (quality_models/default/zh.*) and the score stage on Chinese documents.

Plain Python: the score stage's partition functions (pipeline/score/batches.py) and its distributions
(pipeline/score/distributions.py) on a batch of documents, as jobs/score.py runs them on every unit.
"""
import json
import math
import re
import statistics
from collections import Counter

import pyarrow as pa
import pytest

from conftest import REPO, shared
from pipeline.score.batches import decide_score_partition, score_partition
from pipeline.score.perplexity import available_languages, get_scorer, normalize_for_lm
from pipeline.score.distributions import distributions
from pipeline.score.settings import ClassifierSpec, ScoreConfig
from glassbox.contracts import sha256_file
from pipeline.extract.html import extract_file
from pipeline.extract.settings import ExtractConfig
from quality_models import heldout as heldout_text
from quality_models import train_kenlm
from quality_models.examples import held_out
from quality_models.inputs import parse_spec, read_input

DEFAULT = REPO / "quality_models" / "default"
DATA = REPO / "quality_models" / "data"
UD = [DATA / "zh-ud-gsdsimp-dev.txt", DATA / "zh-ud-pud-test.txt"]
SPAM_WARC = REPO / "examples" / "sample" / "resiliparse-cc-excerpt.warc.gz"
SPAM_LABELS = REPO / "tests" / "data" / "zh_spam" / "labels.tsv"
_HAN = re.compile(r"[\u4e00-\u9fff]")


def _zh_facts() -> dict:
    return json.loads((DEFAULT / "quality_zh.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def scorer():
    return get_scorer(DEFAULT, "zh")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The model's training text as `make quality-models` writes it: the lines of the Chinese prose works the zh
    classifier trained on (python -m quality_models.heldout --train-lines), then the UD sentences."""
    facts = json.loads((DEFAULT / "quality_zh.json").read_text(encoding="utf-8"))
    prose = tmp_path_factory.mktemp("kenlm") / "zh-prose.txt"
    prose.write_text("".join(line + "\n" for line in heldout_text.train_lines(facts, REPO)), encoding="utf-8")
    return [prose] + UD


@pytest.fixture(scope="module")
def heldout(reference):
    """Reference lines the model was not trained on (the trainer's deterministic 10 %)."""
    _, held = train_kenlm.split_heldout(train_kenlm.read_reference(reference, "plain"))
    return held


@pytest.fixture(scope="module")
def pages():
    """The sample excerpt's pages as the pipeline extracts them, with their hand labels (tests/data/zh_spam/labels.tsv,
    read one by one): dicts of url, label (spam | ok | unclear) and text."""
    labels = {}
    for line in SPAM_LABELS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            url, label, _ = line.split("\t", 2)
            labels[url] = label
    out = [{"url": r["url"], "label": labels[r["url"]], "text": r["text"]}
           for r in extract_file(str(SPAM_WARC), "web", "warc", ExtractConfig())
           if r.get("status") == "kept" and r.get("text") and r.get("url") in labels]
    assert Counter(p["label"] for p in out)["spam"] == 7
    return out


@pytest.fixture(scope="module")
def spam(pages):
    """The pages labelled spam: an SEO doorway page, gambling link lists and a betting "page not found", porn
    listings (not chosen by their share of Han characters: a job listing and a company page are Chinese too, and
    labelled ok)."""
    return [p["text"] for p in pages if p["label"] == "spam"]


@pytest.fixture(scope="module")
def ok_zh(pages):
    """The Chinese pages labelled ok: a job listing table and a company page."""
    docs = [p["text"] for p in pages if p["label"] == "ok" and len(_HAN.findall(p["text"])) > 0.3 * len(p["text"])]
    assert len(docs) == 2
    return docs


@pytest.fixture(scope="module")
def heldout_works():
    """Paragraphs (lines of 40 characters or more, the first 6 of each kind) of the Chinese prose works the zh
    classifier held out (the card's seed and fraction, quality_models/examples.held_out): neither quality_zh nor this
    KenLM model (trained on heldout.train_lines, the works the classifier trained on, and UD sentences) read them."""
    facts, skipped, out = _zh_facts(), Counter(), []
    for arg in facts["inputs"]["positives"]:
        docs = [d for d in read_input(parse_spec(str(REPO / arg)), skipped)
                if d.group and held_out(d.group, facts["seed"], facts["holdout"])]
        out += [line.strip() for d in docs for line in d.text.splitlines() if len(line.strip()) >= 40][:6]
    assert len(out) == 6 * len(facts["inputs"]["positives"])   # six lines of every positive kind
    return out


def test_zh_model_is_committed_and_small(scorer):
    assert {"en", "zh"} <= set(available_languages(DEFAULT))
    assert scorer.order == 4
    size = (DEFAULT / "zh.klm").stat().st_size + (DEFAULT / "zh.sp.model").stat().st_size
    assert size < 2_000_000
    card = (DEFAULT / "kenlm-zh.md").read_text(encoding="utf-8")
    for expected in ("zh-prose.txt", "zh-ud-gsdsimp-dev.txt", "zh-ud-pud-test.txt", "CC BY-SA 4.0", "CC BY-SA 3.0",
                     "character coverage 0.9995", "vocabulary 8,000"):
        assert expected in card


def test_card_names_the_text_the_model_was_trained_on(reference):
    """The prose lines rebuilt from the repository are the file the card names, byte for byte."""
    card = (DEFAULT / "kenlm-zh.md").read_text(encoding="utf-8")
    assert f"`{sha256_file(reference[0])}`" in card


def test_normalisation_keeps_chinese():
    line = "２０２０年，北京大學的學生“很多”……"
    out = normalize_for_lm(line)
    assert "北京大學的學生" in out and "年" in out
    assert out.startswith("0000年")  # full-width digits are decimal digits too
    assert len(_HAN.findall(out)) == len(_HAN.findall(line))


def test_chinese_text_is_scored_in_pieces(scorer):
    pieces = scorer.tokenize(normalize_for_lm("这种车辆如果归私人拥有，多半会设置昂贵的音频设备。"))
    assert 5 < len(pieces) < 40  # characters and short words, not one piece per sentence
    p = scorer.perplexity("这种车辆如果归私人拥有，多半会设置昂贵的音频设备。")
    assert p is not None and 1 < p < 10_000
    # traditional characters (two thirds of the reference) are covered too
    assert scorer.perplexity("對於通過社交媒體來跟踪國會山任職變遷的人而言，這次與以往有所不同。") < 10_000


def test_prose_below_spam_below_shuffled(scorer, heldout, spam):
    held = scorer.score_batch(heldout)
    assert len(heldout) > 100 and all(p is not None for p in held)
    spam_ppl = scorer.score_batch(spam)
    shuffled = scorer.score_batch([train_kenlm.shuffled(t) for t in heldout])
    assert statistics.median(held) * 2 < statistics.median(spam_ppl)
    assert statistics.median(held) * 3 < statistics.median(shuffled)
    # per sentence, a shuffled copy reads worse than the original nearly always
    assert sum(s > h for h, s in zip(held, shuffled)) > 0.9 * len(held)


def test_real_prose_below_spam(scorer, spam):
    """lingua's Chinese test sentences (never trained on, only in ../shared/data)."""
    lines = shared("langid", "lingua", "sentences", "zh.txt").read_text(encoding="utf-8").splitlines()
    prose = scorer.score_batch([ln for ln in lines if ln.strip()][:200])
    assert statistics.median(prose) * 1.2 < statistics.median(scorer.score_batch(spam))


def _random_ordering(buckets: list[str], k: int) -> tuple[float, float, float]:
    """k rows drawn at random from rows with these buckets (the buckets of a scorer that orders the rows at random):
    the mean count in the head, in the tail, and the chance of none in the head and k - 1 or more in the tail
    (exact, by counting)."""
    n, c = len(buckets), Counter(buckets)
    head, tail, middle = c["head"], c["tail"], c["middle"]
    p = sum(math.comb(tail, j) * math.comb(middle, k - j) for j in range(k - 1, k + 1)) / math.comb(n, k)
    return k * head / n, k * tail / n, p


def test_score_stage_gives_chinese_documents_a_bucket(heldout_works, pages, spam, ok_zh):
    """Chinese rows get a perplexity and a head/middle/tail bucket from zh's own cut-offs; English
    rows keep theirs; a language without a model (ja) gets nulls. The Chinese rows: paragraphs of prose works
    neither model trained on, the sample's pages labelled spam, and its Chinese pages labelled ok."""
    prose = heldout_works
    n_zh = len(prose) + len(spam) + len(ok_zh)
    texts = prose + spam + ok_zh + ["The river rises in the hills and flows north to the sea.", "今日は良い天気ですね。", ""]
    langs = ["zh"] * n_zh + ["en", "ja", "zh"]
    batch = pa.RecordBatch.from_pydict({
        "id": [f"d{i}" for i in range(len(texts))], "source": ["web"] * len(texts), "text": texts, "lang": langs})
    cfg = ScoreConfig(classifiers=[ClassifierSpec(str(DEFAULT / "quality_en.ftz"), ["en"], "quality_en"),
                                   ClassifierSpec(str(DEFAULT / "quality_zh.ftz"), ["zh"], "quality_zh")],
                      kenlm_dir=str(DEFAULT))
    scored = pa.Table.from_batches(list(score_partition(cfg, batch.schema)(iter([batch]))))
    ppl = scored.column("perplexity").to_pylist()
    assert all(p is not None for p in ppl[:n_zh])
    assert ppl[-3] is not None and ppl[-2] is None and ppl[-1] is None  # en scored; ja no model; empty zh
    # each language its own classifier: zh rows in quality_zh, the en row in quality_en, quality is either
    q, q_zh, q_en = (scored.column(c).to_pylist() for c in ("quality", "quality_zh", "quality_en"))
    assert q[:n_zh] == q_zh[:n_zh] and all(q_en[i] is None for i in range(n_zh))
    assert q[-3] == q_en[-3] is not None and q_zh[-3] is None and q[-2] is None and q[-1] is None
    # quality_zh on text it never trained on: the held-out works' paragraphs above the spam pages its split held out
    # (2 of the 7; the other 5 were among its training negatives). A random scorer ranks both spam pages under all
    # 30 paragraphs with probability 1 / C(32, 2) = 0.002.
    facts = _zh_facts()
    spam_urls = [p["url"] for p in pages if p["label"] == "spam"]
    unseen = [q[len(prose) + i] for i, url in enumerate(spam_urls) if held_out(url, facts["seed"], facts["holdout"])]
    assert len(unseen) == 2
    assert statistics.median(q[:len(prose)]) > 0.5 > max(unseen) and min(q[:len(prose)]) > max(unseen)

    rows, cutoffs = distributions(scored.select(["lang", "source", "quality", "perplexity"]), 0.3, 0.6)
    assert set(cutoffs) == {"en", "zh"}
    zh_row = next(r for r in rows if r["lang"] == "zh" and r["source"] == "*")
    assert zh_row["perplexity_scored"] == n_zh

    decided = pa.Table.from_batches(list(decide_score_partition(cfg, cutoffs, scored.schema)(
        iter(scored.to_batches()))))
    buckets = decided.column("ppl_bucket").to_pylist()
    zh_buckets = buckets[:n_zh]
    assert set(zh_buckets) == {"head", "middle", "tail"}
    assert buckets[-2] is None and buckets[-1] is None
    # the head (lowest 30 %) is prose, and the pages labelled spam land in the tail: none of the 7 in the head, 6 or
    # more in the tail. A scorer that orders the 39 Chinese rows at random puts 2.2 of them in the head and 2.7 in
    # the tail on average, and meets both bounds with probability 0.004 (buckets of 12, 12 and 15 rows).
    spam_buckets = zh_buckets[len(prose):len(prose) + len(spam)]
    assert len(spam_buckets) == 7 and spam_buckets.count("head") == 0 and spam_buckets.count("tail") >= 6, spam_buckets
    mean_head, mean_tail, chance = _random_ordering(zh_buckets, len(spam_buckets))
    assert mean_head > 2 and mean_tail > 2 and chance < 0.01, (mean_head, mean_tail, chance)
    assert decided.column("status").to_pylist() == ["kept"] * len(texts)  # nothing dropped by default
