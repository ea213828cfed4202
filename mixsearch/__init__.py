"""The mixture chosen by experiment (`glassbox mix-search`): a swarm of proxies on mixtures drawn around the
natural one, a mixing law fitted per target domain in bits per byte, a proposal under the repetition cap, and a
check of that proposal by proxies against the natural mix and the DoReMi step.

- `mixsearch.spec`: the search spec (DATA folder, domains, swarm size, proxy, targets, constraints).
- `mixsearch.swarm`: drawing the mixtures and training / evaluating one proxy per mixture, resumable; the swarm's
  record is one JSONL file, one row per proxy.
- `mixsearch.rows`: reading anyone's swarm file, with a clear message for every bad row.
- `mixsearch.law`: the log-linear mixing law (and the other learners it is measured against), cross-validated.
- `mixsearch.propose`: the constrained minimum of the fitted law; which constraints bind; none satisfiable.
- `mixsearch.fit`: `glassbox mix-search fit SWARM.jsonl --out DIR`, the proposal and the manifest's next version.
- `mixsearch.verify`: proxies on the proposal, the natural mix and the DoReMi mix, paired seeds, verdicts.
- `mixsearch.reuse`: a new source added to a searched mixture, the old proposal frozen as one virtual domain.
- `mixsearch.report`: one self-contained HTML page.
"""
