"""Text views for a person (rich; the only modules that import it, tests/test_layering.py
checks): the report (``report.py``), the memory ledger (``memory.py``), the stale-log verdict
(``status.py``), an incident (``incident.py``), ``logx watch``'s views (``watch.py``), ``logx
diff`` (``diff.py``), the catalog (``catalog.py``) and the console they print on
(``console.py``)."""
