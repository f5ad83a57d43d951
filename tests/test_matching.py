"""Matching primitives: partial matches of cut text count the pattern's words, not its gaps."""

from __future__ import annotations

from logforensics._catalog import Regex
from logforensics._matching import required_literals, search

# — partial matches of cut lines —

def test_a_cut_line_matches_a_pattern_whose_words_it_holds():
    """A line cut inside the pattern's words, or after enough of them, is a partial match."""
    assert search(Regex("CUDA error: an illegal memory access was encountered"),
                   "RuntimeError: CUDA error: an illeg", True) is not None
    wait = Regex(r"waitForInput: poll for socket SocketImpl\([^\n]{0,400}?remote=(?P<r>[^)\n]{1,200})\) returned 0")
    assert search(wait, "[c10d] waitForInput: poll for socket SocketImpl(fd=100, addr=[node-0.co", True)


def test_a_cut_inside_a_wide_gap_after_few_words_is_no_match():
    """"cpu" and a cut inside a 60-character gap say nothing of what follows the gap."""
    isa = Regex(r"(?i)(?:CPU|processor)[^\n]{0,60}(?:does not support|lacks|without)[^\n]{0,20}(?P<isa>AVX2|AMX\w*)")
    cut = "[2026-12-02 01:11:17] init_cpu_threads_env and shared memory based AllReduce is "
    assert search(isa, cut, True) is None
    assert search(isa, "this CPU does not support AVX2", False) is not None


def test_what_a_site_match_says_of_the_release_is_the_reports_not_written_into_the_run():
    """A failure-site match narrows the release range of a log that prints no version: the
    report's run says so (a told copy), the run read from the log keeps what the log showed."""
    from conftest import REPO

    from logforensics._analysis import Analyzer, chunks_of

    path = REPO / "fixtures" / "tokenizer_load_failed__slow_mode_fast_tokenizer.log"
    analyzer = Analyzer()
    analyzer.consume(chunks_of(path))
    analyzer.finish()
    report = analyzer.report(str(path))
    read, told = analyzer.runs[-1], report.runs[-1]
    assert analyzer.matcher.release_hints[read.index] == {">=0.5.11"}  # the site's
    assert told.version_hints == {">=0.5.11", "<=0.5.18"} and told.version_range == "0.5.11–0.5.18"
    assert read.version_hints == {"<=0.5.18"}  # the log format's alone


def test_required_literals_are_what_every_match_contains():
    assert required_literals(Regex("Not enough memory\\. Please try")) == (("Not enough memory. Please try",), False)
    assert required_literals(Regex("(?:foo|barbaz)\\d+")) == (("barbaz", "foo"), False)
    assert required_literals(Regex("a.b")) is None  # nothing three characters long is required
