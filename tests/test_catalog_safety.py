"""Regular expressions against hostile input: every catalog regex and every event rule runs in
bounded time, a user's own catastrophic pattern cannot hang ``explain``, and the matcher's
literal prefilter never rejects a line a pattern matches."""

from __future__ import annotations

import re
import time

import pytest
import regex
from conftest import make_catalog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logforensics._analysis import explain
from logforensics._catalog import TRACEBACK_KEYS, load_catalog
from logforensics._dialects import DIALECTS
from logforensics._lint import regex_is_safe
from logforensics._matching import leading_literals, required_literals

RULES = [rule for dialect in DIALECTS.values() for rule in dialect.rules]

CATALOG = load_catalog()
REGEXES = [(f"{p.id}.{key}", getattr(spec, key)) for p in CATALOG.patterns for spec in p.matches
           for key in (*TRACEBACK_KEYS, "line") if getattr(spec, key) is not None]
LINE_SPECS = [(p.id, spec.line) for p, spec in CATALOG.line_specs]


def test_catalog_has_regexes():
    assert len(REGEXES) > 50 and LINE_SPECS


@pytest.mark.parametrize("name,rx", REGEXES, ids=[n for n, _ in REGEXES])
def test_catalog_regex_has_no_catastrophic_backtracking(name, rx):
    assert regex_is_safe(rx), f"{name}: slow on adversarial input"


def test_regex_is_safe_rejects_catastrophic_patterns():
    assert not regex_is_safe(regex.compile(r"(a+)+$"))
    assert not regex_is_safe(regex.compile(r"(\s*-*)*x$"))
    assert regex_is_safe(regex.compile(r"out of memory"))


def test_user_pattern_with_catastrophic_backtracking_does_not_hang_explain(tmp_path):
    hostile = make_catalog({"id": "evil", "match": {"line": r"(a+)+$"}},
                           {"id": "evil_tb", "match": {"message": r"(a|aa)+$"}})
    line = "a" * 5000 + "!"
    data = (f"[2026-03-23 14:00:00 TP0] {line}\nValueError: {line}\n").encode()
    start = time.perf_counter()
    report = explain(data, catalog=hostile)
    assert time.perf_counter() - start < 120  # a net against a hang: each search is cut off by catalog.REGEX_TIMEOUT
    assert report.lines == 2
    assert {s.id for s in report.slow_patterns} == {"evil", "evil_tb"}  # timed out: no match, no hang


def _cpu_seconds(rx: re.Pattern, texts) -> float:
    """This thread's CPU time for searching and matching ``texts``, the best of 3: other
    processes' load does not count in it, and the best of 3 drops a stray interruption."""
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        for text in texts:
            rx.search(text)
            rx.match(text)
        best = min(best, time.thread_time() - start)
    return best


@pytest.mark.parametrize("rule", [r for r in RULES if r.pattern], ids=lambda r: f"{r.kind}:{r.pattern[:30]}")
def test_event_rules_run_in_linear_time(rule):
    """The event rules use ``re`` (no timeout): hostile text that passes a rule's literal test
    must not make its regex quadratic. Text 16 times longer costs about 16 times the CPU time
    when linear and 256 times when quadratic: the bound, 64 times, is between, with room for
    noise either way (no wall-clock limit: a loaded machine does not change the ratio)."""
    rx = rule.compiled()
    head = rule.starts or ""
    lit = rule.contains or ""

    def texts(n):
        fills = ("a" * n, "a " * (n // 2), "a=" * (n // 2), " " * n, "-" * n, "a: " * (n // 3), "(" * n)
        return [head + f + lit for f in fills] + [head + lit + f for f in fills]

    small, large = _cpu_seconds(rx, texts(2000)), _cpu_seconds(rx, texts(32000))
    assert large < 64 * small + 0.002, (rule.kind, small, large)


def test_event_rules_treat_every_digit_alike():
    """The fast path learns line templates with every digit made 0 (_fastpath.learn_template):
    that is sound only while no rule names a literal digit."""
    from re import _constants as C  # noqa: N812
    from re import _parser

    def digits(items) -> bool:
        for op, av in items:
            if op in (C.LITERAL, C.NOT_LITERAL) and chr(av).isdigit():
                return True
            if op in (C.IN,) and any(o is C.LITERAL and chr(a).isdigit() for o, a in av):
                return True
            if op is C.SUBPATTERN and digits(av[3]):
                return True
            if op is C.BRANCH and any(digits(alt) for alt in av[1]):
                return True
            if op in (C.MAX_REPEAT, C.MIN_REPEAT) and digits(av[2]):
                return True
            if op in (C.ASSERT, C.ASSERT_NOT) and digits(av[1]):
                return True
        return False

    for rule in RULES:
        if rule.pattern:
            assert not digits(_parser.parse(rule.pattern)), f"{rule.kind}: literal digit in {rule.pattern!r}"
    assert digits(_parser.parse(r"HTTP/1\.1")) and not digits(_parser.parse(r"(?P<gb2>[\d.]+)"))


# each source once (many patterns share a regex); the line patterns meet every line, so more examples
PREFILTERED = list({rx.pattern: (name, rx, 40 if name.endswith(".line") else 15) for name, rx in REGEXES}.values())


@pytest.mark.parametrize("name,rx,examples", PREFILTERED, ids=[n for n, _, _ in PREFILTERED])
def test_literal_prefilters_keep_every_match_of_their_pattern(name, rx, examples):
    """The matcher only searches a catalog regex (a line's, a traceback's message, type, frame
    or context) when one of its required literals is in the text, and only looks for a partial
    match at a cut when the text holds one of its leading literals (every match starts with
    one): check both claims on strings generated from the pattern itself."""
    need, lead = required_literals(rx), leading_literals(rx)
    if need is None and lead is None:
        return  # always searched
    try:
        strategy = st.from_regex(re.compile(rx.pattern))  # re's syntax only (compiling raises now, not when drawn)
    except Exception:  # noqa: BLE001 - syntax hypothesis cannot generate from
        pytest.skip("pattern syntax not supported by from_regex")

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def check(text):
        m = rx.search(text)
        if m is None:
            return
        if need is not None:
            literals, casefold = need
            hay = text.casefold() if casefold else text
            assert any(lit in hay for lit in literals), (text, literals)
        if lead is not None:
            prefixes, casefold = lead
            matched = m.group(0).casefold() if casefold else m.group(0)
            assert any(matched.startswith(p) or p.startswith(matched) for p in prefixes), (matched, prefixes)

    check()


def test_leading_literals_examples():
    assert leading_literals(regex.compile(r"CUDA out of memory\. Tried")) == (("CUDA out of memo",), False)  # 16 long
    lits, _ = leading_literals(regex.compile(r"(?:CUDA|HIP|NPU) out of memory|CUBLAS_STATUS_ALLOC_FAILED"))
    assert set(lits) == {"CUDA out of memo", "HIP out of memor", "NPU out of memor", "CUBLAS_STATUS_AL"}
    assert leading_literals(regex.compile(r"(?P<module>[\w.]+) is required")) is None  # starts with a class
    assert leading_literals(regex.compile(r"(?<=Tried to allocate )\d+ GiB")) is None  # a class after the lookbehind
    # a lookaround takes no character of the match
    assert leading_literals(regex.compile(r"(?<!enable )device-side assert")) == (("device-side asse",), False)
    assert leading_literals(regex.compile(r"^No module named (?P<m>\w+)")) == (("No module named ",), False)
    assert leading_literals(regex.compile(r"(?i)Address already")) == (("address already",), True)


def test_required_literals_examples():
    assert required_literals(regex.compile(r"Decode out of memory\. Try")) == (("Decode out of memory. Try",), False)
    lits, _ = required_literals(regex.compile(r"unhandled system error|ncclSystemError"))
    assert set(lits) == {"unhandled system error", "ncclSystemError"}
    assert required_literals(regex.compile(r"(?:foo)?\d+")) is None  # nothing required
    assert required_literals(regex.compile(r"a|bcd")) is None  # too short to reject anything
    assert required_literals(regex.compile(r"(?i)address already in use"))[1] is True
    assert required_literals(regex.compile(r"\p{L}+ failed hard")) is None  # regex-only syntax
    # a scoped case-insensitive part folds every literal; an escaped bracket before a set is re's syntax
    lits, casefold = required_literals(regex.compile(r"Mooncake failed|(?i:cannot register)"))
    assert set(lits) == {"mooncake failed", "cannot register"} and casefold
    assert required_literals(regex.compile(r"archs? \[[^\]]*\] not supported")) == (("] not supported",), False)


def test_every_bundled_line_pattern_has_a_prefilter():
    """A line pattern without required literals is searched on every line of every log, and a
    search with a timeout costs up to hundreds of microseconds: each must have one."""
    assert [pid for pid, rx in LINE_SPECS if required_literals(rx) is None] == []


def test_a_backtracking_user_pattern_is_reported_once_and_disabled():
    """``(a+)+$`` times out on every line of a's: after ``DISABLE_AFTER_TIMEOUTS`` timeouts it
    is disabled for the rest of the file (counted, not timed: 3 timeouts, not one per line),
    and the report names it once with its id and the time it cost."""
    import io

    from rich.console import Console

    from logforensics._catalog import DISABLE_AFTER_TIMEOUTS
    from logforensics._render.report import render

    hostile = make_catalog({"id": "evil", "match": {"line": r"(a+)+$"}})
    data = "".join(f"[2026-03-23 14:00:{i:02d} TP0] {'a' * 5000}!\n" for i in range(12)).encode()
    report = explain(data, catalog=hostile)
    [slow] = report.slow_patterns
    assert (slow.id, slow.timeouts, slow.disabled) == ("evil", DISABLE_AFTER_TIMEOUTS, True)
    assert slow.seconds > 0
    assert report.to_json()["slow_patterns"] == [slow.to_dict()]
    buffer = io.StringIO()
    render(report, Console(file=buffer, width=200, color_system=None))
    assert buffer.getvalue().count("Pattern evil (") == 1
    assert "timed out 3×" in buffer.getvalue() and "disabled for the rest of this file" in buffer.getvalue()
