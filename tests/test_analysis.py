"""The analysis driver: ``explain`` and ``Analyzer`` over whole inputs (the fast path's own
tests are in test_fastpath.py)."""

from __future__ import annotations

from conftest import log_bytes

from logforensics._analysis import Analyzer, Options, explain
from logforensics._sources import iter_spans

SERVER_ARGS = "[2026-03-23 14:00:00] server_args=ServerArgs(model_path='m', tp_size=2)"
WEIGHTS = "[2026-03-23 14:00:05 TP0] Load weight begin. avail mem=78.50 GB"
READY = "[2026-03-23 14:00:50] The server is fired up and ready to roll!"


def test_long_lines_are_cut_in_blocks_without_loading_them():
    data = b"short\n" + b"x" * 5000 + b"\nafter\n" + b"y" * 3000
    items = list(iter_spans([data[i : i + 700] for i in range(0, len(data), 700)], max_line=1000))
    special = [i for i in items if not isinstance(i, tuple)]
    assert [(s.truncated, s.eol, len(s.data), s.size) for s in special] == [(True, True, 1000, 5001),
                                                                             (True, False, 1000, 3000)]
    report = explain(data)
    assert report.lines == 4


def test_run_option_picks_another_run():
    data = log_bytes(SERVER_ARGS, READY, SERVER_ARGS.replace("14:00:00", "15:00:00"), WEIGHTS.replace("14:", "15:"))
    assert explain(data).run.index == 2
    assert explain(data, options=Options(run_index=1)).run.phase == "ready"


def test_the_report_tells_the_root_causes_phase_without_writing_it_into_the_run_read():
    """An argparse failure: the log's lines reach no phase, the root cause says ``args``. The
    report's run says so; the analyzer's run (which ``logx watch`` goes on reading into) does not."""
    from conftest import FIXTURES

    analyzer = Analyzer()
    analyzer.consume([(FIXTURES / "argparse_error__renamed_flag.log").read_bytes()])
    analyzer.finish()
    report = analyzer.report("x", Options(status=False))
    assert report.run is not None and report.run.phase == "args" and report.runs[-1] is report.run
    assert analyzer.runs[-1].phase == "launch" and "args" not in analyzer.runs[-1].phase_lines
