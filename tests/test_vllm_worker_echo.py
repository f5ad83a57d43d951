"""vLLM's engine core echoes a worker's failure: its collective_rpc gets the failure back from
the worker and raises it again (``RuntimeError: Worker failed with error '…', please check the
stack trace above for the root cause``, and the release's other forms of it). The echo is a
consequence: the worker's own traceback names the cause, and the echo is
``worker_failed_see_above`` (a symptom) or folded into the cause it echoes — never an
``unclassified_exception`` of its own."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from logforensics._analysis import Options, explain

SP = "/usr/local/lib/python3.12/dist-packages"
OOM = ("CUDA out of memory. Tried to allocate 1.96 GiB. GPU 1 has a total capacity of 79.19 GiB of which 1.21 GiB"
       " is free. Including non-PyTorch memory, this process has 77.97 GiB memory in use. Of the allocated memory"
       " 76.05 GiB is allocated by PyTorch, and 412.33 MiB is reserved by PyTorch but unallocated.")


def _traceback(prefix: str, frames: list[tuple[str, int, str, str]], last: str) -> list[str]:
    out = [prefix + "Traceback (most recent call last):"]
    for file, number, function, code in frames:
        out += [f'{prefix}  File "{SP}/vllm/{file}", line {number}, in {function}', f"{prefix}    {code}"]
    return [*out, prefix + last]


def _worker_oom(prefix: str) -> list[str]:
    """A worker's own traceback: torch's OOM in the forward pass."""
    return [prefix + "WorkerProc hit an exception.", *_traceback(prefix, [
        ("v1/executor/multiproc_executor.py", 819, "worker_busy_loop", "output = func(*args, **kwargs)"),
        ("v1/worker/gpu_worker.py", 623, "execute_model", "output = self.model_runner.execute_model("),
        ("v1/worker/gpu_model_runner.py", 3087, "execute_model", "model_output = self._model_forward("),
        ("model_executor/layers/activation.py", 92, "forward_cuda", "out = torch.empty(output_shape)"),
    ], "torch.OutOfMemoryError: " + OOM)]


def _engine_echo(prefix: str, raised_in: tuple[str, int, str], message: str) -> list[str]:
    file, number, function = raised_in
    path = [("v1/engine/core.py", 886, "run_busy_loop", "self._process_input_queue()")] \
        if function == "_handle_client_request" else [
        ("v1/engine/core.py", 886, "run_busy_loop", "self._process_engine_step()"),
        ("v1/engine/core.py", 919, "_process_engine_step", "outputs, model_executed = self.step_fn()"),
        ("v1/engine/core.py", 449, "step_with_batch_queue", "model_output = future.result()")]
    return [prefix + "EngineCore encountered a fatal error.", *_traceback(prefix, [
        *path, (file, number, function, "raise RuntimeError("),
    ], "RuntimeError: " + message)]


W013 = "(Worker_TP1 pid=96) ERROR 12-21 09:12:04 [multiproc_executor.py:824] "
E013 = "(EngineCore_DP0 pid=61) ERROR 12-21 09:12:04 [core.py:868] "
W034 = "(Worker_TP1 pid=96) ERROR 12-01 10:12:04 [multiproc_executor.py:1137] "
E034 = "(EngineCore pid=61) ERROR 12-01 10:12:04 [core.py:1586] "
W073 = "(VllmWorker rank=1 pid=96) ERROR 02-26 09:54:12 [multiproc_executor.py:236] "
E073 = "ERROR 02-26 09:54:12 [core.py:291] "
ECHO = "Worker failed with error '{}', please check the stack trace above for the root cause"

# (release, worker prefix, engine prefix, the frame that raised the echo, the echo's message)
ECHOES = {
    "0.13 get_response, the worker's error": (
        W013, E013, ("v1/executor/multiproc_executor.py", 342, "get_response"), ECHO.format(OOM)),
    "0.13 get_response, a bare assert's empty error": (
        W013, E013, ("v1/executor/multiproc_executor.py", 342, "get_response"), ECHO.format("")),
    "0.8.5 collective_rpc": (
        W013, E013, ("v1/executor/multiproc_executor.py", 190, "collective_rpc"), ECHO.format(OOM)),
    "0.34 fault tolerance": (
        W034, E034, ("v1/executor/multiproc_executor.py", 572, "get_response"), "One or more workers failed"),
    "0.34 KV connector output": (
        W034, E034, ("v1/executor/multiproc_executor.py", 540, "get_response"),
        "Worker failed with KV connector output"),
    "0.34 a call after a worker died": (
        W034, E034, ("v1/executor/multiproc_executor.py", 488, "collective_rpc"), "Executor failed."),
    "0.34 the engine told its executor failed": (
        W034, E034, ("v1/engine/core.py", 1985, "_handle_client_request"), "Executor failed."),
    "0.7.3 V1 alpha": (
        W073, E073, ("v1/executor/multiproc_executor.py", 124, "collective_rpc"), "Worker failed"),
}


@pytest.mark.parametrize("release", list(ECHOES))
def test_the_engine_cores_echo_of_a_worker_failure_is_not_a_cause(tmp_path, release):
    worker, engine, raised_in, message = ECHOES[release]
    log = tmp_path / "echo.log"
    log.write_text("\n".join([*_worker_oom(worker), *_engine_echo(engine, raised_in, message)]) + "\n")
    findings = explain(log, options=Options(status=False)).findings
    ids = [f.id for f in findings]
    assert "unclassified_exception" not in ids, ids
    assert [f.id for f in findings if f.is_problem][0] == "forward_cuda_oom_activations", ids
    # the echo's lines are evidence of the symptom, or of the cause it echoes (an OOM in the forward)
    echo_line = next(i for i, text in enumerate(log.read_text().splitlines(), 1) if "RuntimeError: " in text)
    (owner,) = [f for f in findings if any(e.line == echo_line for e in f.evidence)]
    if "out of memory" in message:
        assert owner.id == "forward_cuda_oom_activations"
    else:
        assert (owner.id, owner.role) == ("worker_failed_see_above", "symptom")
        assert "<worker_error>" not in owner.explanation and "its error: )" not in owner.explanation


def test_a_log_cut_to_the_echo_names_the_workers_error():
    """Only the echo is left (`tail`): the symptom leads, and says what the worker reported."""
    path = FIXTURES / "vllm" / "worker_failed_see_above__v1_013_engine_echo_tail12.log"
    top = [f for f in explain(path, options=Options(status=False)).findings if f.is_problem][0]
    assert top.id == "worker_failed_see_above"
    assert "(its error: CUDA out of memory)" in top.explanation


def test_a_bare_worker_failed_is_the_echo_only_where_v1s_executor_raised_it(tmp_path):
    """V0's worker logs "Worker failed" before its own traceback (the worker's failure, not an
    echo): the pattern reads the exception's message, not the line before it, and takes a bare
    "Worker failed" only from the frame of V1's executor that raises the echo."""
    log = tmp_path / "v0.log"
    log.write_text("\n".join([
        "(VllmWorkerProcess pid=88) ERROR 12-20 20:25:46 multiproc_worker_utils.py:240] Worker failed",
        "(VllmWorkerProcess pid=88) Traceback (most recent call last):",
        f'(VllmWorkerProcess pid=88)   File "{SP}/vllm/executor/multiproc_worker_utils.py", line 234, in'
        " _run_worker_process",
        "(VllmWorkerProcess pid=88)     output = run_method(worker, method, args, kwargs)",
        "(VllmWorkerProcess pid=88) RuntimeError: Worker failed",
    ]) + "\n")
    ids = [f.id for f in explain(log, options=Options(status=False)).findings]
    assert "worker_failed_see_above" not in ids, ids
