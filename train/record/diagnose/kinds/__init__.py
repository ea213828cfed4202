"""One module per kind of finding, each with its rule (``detect``), the thresholds it reads (a settings
dataclass in ``../settings.py``, whose fields DiagnoseConfig inherits), its advice, what a record must hold to judge it (``needs``), and one
``KIND = Kind(...)`` that ``train/record/diagnose/registry.py`` lists. Modules without a ``KIND`` hold what
several kinds share (``flat.py``: the flat stretch of plateau and stalled; ``validations.py``)."""
