"""The field corpus (../shared/corpus, real pasted logs) through stages 1–4.

Every log parses, every line is accounted for, and each labelled ``key_line`` — the line that
shows the cause — ends up in a typed event or inside a traceback, never lost as a plain line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logforensics._events import Event
from logforensics._pipeline import parse
from logforensics._sources import iter_file

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
LABELS = CORPUS / "labels.jsonl"


def _labels() -> list[dict]:
    if not LABELS.is_file():
        return []
    return [json.loads(row) for row in LABELS.read_text().splitlines() if row.strip()]


LABELLED = _labels()


@pytest.fixture(autouse=True)
def _need_corpus():
    if not LABELS.is_file():
        pytest.skip(f"field corpus not found at {CORPUS} (expected ../shared/corpus beside the repo)")


def test_corpus_is_present_and_labelled():
    logs = sorted(CORPUS.glob("*.log"))
    assert len(logs) >= 30
    assert {p.stem for p in logs} == {lab["id"] for lab in LABELLED}


def _events(path: Path) -> list[Event]:
    return list(parse(path))


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.log")), ids=lambda p: p.stem)
def test_every_log_parses_and_every_line_is_accounted_for(path):
    events = _events(path)
    n_lines = len(list(iter_file(path)))
    own = [e.number for e in events if e.kind != "traceback"]
    tbs = [e.traceback for e in events if e.kind == "traceback"]
    evidence = {n for tb in tbs for n, _ in tb.lines}
    assert len(own) == len(set(own)) and not evidence & set(own)  # nothing reported twice
    covered = set(own)
    for tb in tbs:
        covered.update(range(tb.first_line, tb.last_line + 1))
    assert covered == set(range(1, n_lines + 1))  # nothing dropped


def _key_line_numbers(path: Path, key: str) -> list[int]:
    return [n for n, raw in enumerate(path.read_bytes().split(b"\n"), 1)
            if raw.rstrip(b"\r").decode("utf-8", "replace") == key]


def _exception_text(exc_type: str, message: str) -> str:
    first = message.splitlines()[0].rstrip() if message else ""
    return f"{exc_type}: {first}" if first else exc_type


def where_key_line_went(path: Path, key: str) -> str | None:
    """How the key line was kept: ``"event:<kind>"`` or ``"traceback:<type>"``; None if lost."""
    numbers = set(_key_line_numbers(path, key))
    assert numbers, "key_line must be a line of the file"
    for e in _events(path):
        if e.kind == "traceback":
            tb = e.traceback
            in_lines = any(n in numbers or text == key for n, text in tb.lines)
            as_exception = any(exc.type and key.rstrip().endswith(_exception_text(exc.type, exc.message))
                               for exc in tb.exceptions)
            if in_lines or as_exception:
                return f"traceback:{tb.exc_type}"
        elif e.kind != "line" and e.number in numbers:
            return f"event:{e.kind}"
    return None


@pytest.mark.parametrize("label", LABELLED, ids=[lab["id"] for lab in LABELLED])
def test_key_line_is_not_lost_as_noise(label):
    path = CORPUS / f"{label['id']}.log"
    assert where_key_line_went(path, label["key_line"]) is not None, (
        f"{label['id']} ({label['root_cause']}): key line became a plain 'line' event: {label['key_line'][:160]!r}")
