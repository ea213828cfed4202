"""`spark-submit jobs/tokenize.py --config C --data D`: decontaminate, train the tokenizer, write token
shards (the job is jobs/tokenize_job.py).

Why two files: a script run from jobs/ (spark-submit jobs/mix.py, python jobs/extract.py, ...) has
this folder first on sys.path, so the standard library's `import tokenize`, which linecache, inspect
and dataclasses do, finds this file. Imported under that name it therefore loads the standard
module in its own place and nothing else.
"""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "tokenize":
    import importlib.machinery
    import importlib.util

    _spec = importlib.machinery.PathFinder.find_spec(
        "tokenize", [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE])
    _std = importlib.util.module_from_spec(_spec)
    sys.modules["tokenize"] = _std  # what the importer hands back
    _spec.loader.exec_module(_std)
else:
    if __name__ == "__main__":
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    from jobs.tokenize_job import main, run  # noqa: F401  (`from jobs import tokenize` works too)

    if __name__ == "__main__":
        sys.exit(main())
