"""vLLM's front end logs EngineDeadError whenever its engine core is gone: when the server was
asked to stop (Ctrl-C, SIGTERM: ``engine_stopped_on_shutdown``, nothing failed), and when the
engine died of an error, after which uvicorn shuts the server down. The shutdown explains the
engine's death only when it was asked for before anything failed; an engine that died first
keeps its failure as the verdict, and the shutdown is its aftermath."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from logforensics._analysis import Options, explain

SP = "/usr/local/lib/python3.12/dist-packages"
A = "(APIServer pid=9) "
E = "(EngineCore_DP0 pid=88) "

SERVING = [
    A + "INFO 12-21 08:00:12 [api_server.py:1425] Starting vLLM API server 0 on http://0.0.0.0:8000",
    A + "INFO:     Application startup complete.",
    A + 'INFO:     10.0.3.17:51122 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    A + "INFO 12-21 08:10:22 [loggers.py:236] Engine 000: Avg prompt throughput: 1421.3 tokens/s, Avg generation"
        " throughput: 412.9 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 7.8%, Prefix cache hit"
        " rate: 2.1%",
]


def _traceback(prefix: str, frames: list[tuple[str, int, str, str]], last: str) -> list[str]:
    out = [prefix + "Traceback (most recent call last):"]
    for file, number, function, code in frames:
        out += [f'{prefix}  File "{SP}/{file}", line {number}, in {function}', f"{prefix}    {code}"]
    return [*out, prefix + last]


ENGINE_FATAL = [E + "ERROR 12-21 08:10:27 [core.py:907] EngineCore encountered a fatal error.", *_traceback(
    E + "ERROR 12-21 08:10:27 [core.py:907] ", [
        ("vllm/v1/engine/core.py", 886, "run_busy_loop", "self._process_engine_step()"),
        ("vllm/v1/core/sched/scheduler.py", 812, "update_from_output", "request = self.requests[req_id]"),
    ], "KeyError: 'chatcmpl-7f3a9b21c4d84e6f'")]
ENGINE_DEAD = [A + "ERROR 12-21 08:10:27 [async_llm.py:480] AsyncLLM output_handler failed.", *_traceback(
    A + "ERROR 12-21 08:10:27 [async_llm.py:480] ", [
        ("vllm/v1/engine/async_llm.py", 439, "output_handler", "outputs = await engine_core.get_output_async()"),
        ("vllm/v1/engine/core_client.py", 845, "get_output_async", "raise self._format_exception(outputs) from None"),
    ], "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for"
       " the root cause.")]
KEYBOARD_INTERRUPT = _traceback(E, [
    ("vllm/v1/engine/core.py", 886, "run_busy_loop", "self._process_input_queue()"),
    ("python3.12/queue.py", 171, "get", "self.not_empty.wait()"),
], "KeyboardInterrupt")
SIGNAL = [E + "INFO 12-21 08:10:26 [core.py:1454] [shutdown] EngineCore: trigger received signal=SIGTERM"]
UVICORN = [A + "INFO:     Shutting down", A + "INFO:     Waiting for application shutdown.",
           A + "INFO:     Application shutdown complete.", A + "INFO:     Finished server process [9]"]
DIED = [A + "ERROR 12-21 08:10:27 [core_client.py:606] Engine core proc EngineCore_DP0 died unexpectedly,"
            " shutting down client."]

STOPPED = {  # asked to stop, then the engine's death
    "uvicorn's shutdown, then EngineDeadError": [*SERVING, *UVICORN[:1], *ENGINE_DEAD, *UVICORN[1:]],
    "the engine's signal line, then EngineDeadError": [*SERVING, *SIGNAL, *ENGINE_DEAD, *UVICORN],
}
FAILED = {  # the engine died, then the server was shut down: (log, the verdict)
    "a fatal error, EngineDeadError, shutdown": ([*SERVING, *ENGINE_FATAL, *ENGINE_DEAD, *UVICORN],
                                                 "unclassified_exception"),
    "a fatal error, shutdown, then EngineDeadError": ([*SERVING, *ENGINE_FATAL, *UVICORN[:1], *ENGINE_DEAD,
                                                       *UVICORN[1:]], "unclassified_exception"),
    "the engine died unexpectedly, shutdown, EngineDeadError": ([*SERVING, *DIED, *UVICORN[:1], *ENGINE_DEAD],
                                                                "engine_died_without_traceback"),
    "EngineDeadError alone (its cause cut), then shutdown": ([*ENGINE_DEAD, *UVICORN], "init_failed_see_above"),
}


def _findings(tmp_path, lines: list[str]):
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    return explain(log, options=Options(status=False))


@pytest.mark.parametrize("shape", list(STOPPED))
def test_a_shutdown_asked_for_before_the_engine_died_is_the_answer(tmp_path, shape):
    report = _findings(tmp_path, STOPPED[shape])
    assert [f.id for f in report.findings if f.is_problem] == [], [f.id for f in report.findings]
    assert "engine_stopped_on_shutdown" in [f.id for f in report.findings]
    assert report.exit_code == 0


@pytest.mark.parametrize("shape", list(FAILED))
def test_an_engine_that_died_before_the_shutdown_keeps_its_failure(tmp_path, shape):
    lines, cause = FAILED[shape]
    report = _findings(tmp_path, lines)
    ids = [f.id for f in report.findings]
    assert "engine_stopped_on_shutdown" not in ids, ids
    assert [f.id for f in report.findings if f.is_problem][0] == cause, ids
    assert report.exit_code == 1


def test_the_signals_own_traceback_is_no_failure_before_the_shutdown(tmp_path):
    """Ctrl-C's KeyboardInterrupt, printed before uvicorn's "Shutting down", is the stop itself:
    the EngineDeadError after it is still the shutdown's."""
    lines = [*SERVING, *KEYBOARD_INTERRUPT, *UVICORN[:1], *ENGINE_DEAD, *UVICORN[1:]]
    (owner,) = [f for f in _findings(tmp_path, lines).findings
                if any("EngineDeadError" in e.text for e in f.evidence)]
    assert owner.id == "engine_stopped_on_shutdown"


def test_the_shipped_sigint_shutdown_stays_a_shutdown():
    report = explain(FIXTURES / "vllm" / "engine_stopped_on_shutdown__sigint_after_serving_tail.log",
                     options=Options(status=False))
    assert [f.id for f in report.findings] == ["engine_stopped_on_shutdown"]
