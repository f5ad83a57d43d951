"""Text views for a person (rich): the report (``report.py``) and the stale-log verdict
(``status.py``). The memory ledger's table and watch's views still live in ``memory.py`` and
``watch.py``."""
