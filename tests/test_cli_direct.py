"""``explain``, ``status`` and ``watch`` are read without typer (``_cli._direct``) when their command line
is of a form read the same by typer: whatever it reads, typer reads alike, and what it does not
read goes to typer."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from logforensics import _cli as cli


def _typer_reading(argv: list[str], monkeypatch) -> tuple[object, dict] | None:
    """The command and arguments typer calls for ``argv`` (None: it calls none)."""
    called: list[tuple[object, dict]] = []
    monkeypatch.setattr(cli, "_run", lambda function, kwargs: called.append((function, kwargs)) or 0)
    result = CliRunner().invoke(cli.typer_app(), argv)
    assert result.exit_code in (0, 2), result.output  # called, or a usage error
    return called[0] if called else None


COMMON = [
    ["explain", "server.log"],
    ["explain", "--json", "a.log", "b.log"],
    ["explain", "-", "--json"],
    ["explain", "--run", "2", "--width=90", "-v", "x.log"],
    ["explain", "-j", "3", "--dialect", "VLLM", "--separate", "x.log"],
    ["explain", "--status", "--since", "2026-01-02T03:04:05", "--pid", "12", "--silence", "5", "x.log"],
    ["explain", "--patterns", "p1", "--patterns=p2", "x.log"],
    ["status", "--json", "x.log"],
    ["status", "--since=@1700000000", "--width", "40", "x.log", "y.log"],
    ["watch", "--until", "ready", "--json", "server.log"],
    ["watch", "--timeout", "2.5", "--silence=30", "--from-end", "--plain", "--pid", "7", "a.log", "b.log"],
]


@pytest.mark.parametrize("argv", COMMON, ids=" ".join)
def test_common_command_lines_are_read_directly_as_typer_reads_them(argv, monkeypatch):
    direct = cli._direct(argv)
    assert direct is not None
    assert direct == _typer_reading(argv, monkeypatch)


@pytest.mark.parametrize("argv", [
    ["explain"], ["explain", "--help"], ["explain", "--", "x.log"], ["explain", "-vj2", "x.log"],
    ["explain", "--width", "5", "x.log"], ["explain", "--run", "-1", "x.log"], ["explain", "--json=1", "x.log"],
    ["explain", "--dialect", "nginx", "x.log"], ["status", "--since", "soonish", "x.log"],
    ["status", "--jobs", "2", "x.log"], ["diff", "a.log", "b.log"], ["--version"], [],
    ["watch"], ["watch", "--until", "done", "x.log"], ["watch", "--pid", "0", "x.log"],
], ids=" ".join)
def test_other_command_lines_go_to_typer(argv):
    assert cli._direct(argv) is None


_VALUES = st.sampled_from(["1", "0", "20", "-3", "abc", "soonish", "@5", "sglang", "Vllm", "p", "2.5", "",
                           "ready", "exit", "inf"])
_TOKENS = st.one_of(
    st.sampled_from(["--json", "-v", "--verbose", "--status", "--separate", "--run", "--width", "--pid", "--since",
                     "--silence", "-j", "--jobs", "--dialect", "--patterns", "--help", "--", "-", "--no-json", "-x",
                     "--until", "--timeout", "--from-end", "--plain"]),
    st.builds(lambda name, value: f"{name}={value}",
              st.sampled_from(["--run", "--width", "--since", "--json"]), _VALUES),
    _VALUES, st.sampled_from(["a.log", "b.log"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(["explain", "status", "watch"]), tokens=st.lists(_TOKENS, max_size=7))
def test_any_command_line_read_directly_is_read_alike_by_typer(command, tokens, monkeypatch):
    argv = [command, *tokens]
    direct = cli._direct(argv)
    if direct is not None:
        assert direct == _typer_reading(argv, monkeypatch)
