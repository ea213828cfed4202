from pathlib import Path

import pytest

from conftest import SHARED_DATA, SHARED_SKIP
from pipeline.clean import langid
from pipeline.clean.langid import LanguageIdentifier, default_model_path, get_identifier
from pipeline.models import ModelError

DATA = SHARED_DATA
LANGS = ["en", "de", "fr", "es", "it", "nl", "pt", "ru", "zh", "ja"]


@pytest.fixture(scope="module")
def ident():
    if not default_model_path().is_file():
        pytest.skip(f"{default_model_path()} missing: run `make setup`")
    return get_identifier()


def test_default_path_and_env(monkeypatch, tmp_path):
    monkeypatch.delenv("GLASSBOX_LID_MODEL", raising=False)
    assert default_model_path() == Path(langid.__file__).resolve().parents[2] / "models" / "lid.176.ftz"
    monkeypatch.setenv("GLASSBOX_LID_MODEL", str(tmp_path / "m.ftz"))
    assert default_model_path() == tmp_path / "m.ftz"


def test_missing_model_says_make_setup(tmp_path):
    with pytest.raises(ModelError, match="make setup"):
        LanguageIdentifier(tmp_path / "nope.ftz").predict(["hello world"])
    with pytest.raises(ModelError, match="make setup"):
        get_identifier(tmp_path / "nope.ftz")


def test_empty_texts_need_no_model(tmp_path):
    # nothing to predict: the (missing) model is never loaded
    assert LanguageIdentifier(tmp_path / "nope.ftz").predict(["", "  \n "]) == [("unknown", 0.0)] * 2


def test_predict_basic(ident):
    out = ident.predict(["The quick brown fox jumps over the lazy dog.", "",
                         "Le chat est sur la table.\nIl dort depuis ce matin.", "Der Hund schläft."])
    assert [lang for lang, _ in out] == ["en", "unknown", "fr", "de"]
    assert all(0.0 <= s <= 1.0 for _, s in out)
    assert out[1] == ("unknown", 0.0)
    assert ident.predict([]) == []


def test_identifier_is_cached(ident):
    assert get_identifier() is ident
    assert get_identifier(str(default_model_path())) is ident


def test_sentence_accuracy(ident):
    folder = DATA / "langid" / "lingua" / "sentences"
    if not folder.is_dir():
        pytest.skip(f"{SHARED_SKIP}: {folder}")
    acc = {}
    for lang in LANGS:
        sents = [s for s in (folder / f"{lang}.txt").read_text(encoding="utf-8").splitlines() if s.strip()]
        preds = ident.predict(sents)
        acc[lang] = sum(p == lang for p, _ in preds) / len(sents)
    print("\nlid.176 sentence accuracy: " + ", ".join(f"{k} {v:.3f}" for k, v in acc.items()))
    assert all(v >= 0.9 for v in acc.values()), acc
