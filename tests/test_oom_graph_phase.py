"""Where a torch OOM happened, CUDA graph capture or serving, is read from where it was raised
(a frame that captures or sets the graphs up, the run's phase and capture lines), never from
torch's message: its standard text names "memory ... allocated in private pools (e.g., CUDA
Graphs)" whenever graphs exist, serving included. A graph's wrapper or replay (vLLM's
``compilation/cuda_graph.py:__call__`` on every V1 forward, SGLang's
``cuda_graph_runner.py:replay`` on every decode step) is serving, not capture."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from logforensics._analysis import Options, explain
from logforensics._memory import build_ledger
from logforensics._memory.facts import oom_sentence

SERVING = [  # an OOM while serving, its stack through a graph's wrapper/replay, its message naming CUDA Graphs
    "forward_cuda_oom_activations__decode_graph_replay_private_pools",
    "vllm/forward_cuda_oom_activations__v1_013_graph_wrapper_frames_private_pools",
]
CAPTURE = [  # a capture's own frames or capture lines: still capture
    "cuda_graph_capture_oom__target_decode_0_5_23",
    "cuda_graph_capture_oom__interleaved_ranks",
    "vllm/cuda_graph_capture_oom__v1_033_capture_unprefixed_traceback",
]


def _report(name: str):
    return explain(FIXTURES / f"{name}.log", options=Options(status=False))


@pytest.mark.parametrize("name", SERVING)
def test_a_serving_oom_through_a_graphs_replay_is_a_serving_oom(name):
    report = _report(name)
    assert "private pools (e.g., CUDA Graphs)" in (FIXTURES / f"{name}.log").read_text()
    assert report.primary.id == "forward_cuda_oom_activations"
    ledger = build_ledger(report.run)
    assert ledger.oom is not None and ledger.oom.phase == "serving"
    assert "CUDA graph capture" not in oom_sentence(ledger.oom, ledger.phase_words)
    assert all(r.step_state("cuda_graphs", ledger.run_reached, ledger.hybrid) != "ran_out" for r in ledger.ranks)


@pytest.mark.parametrize("name", CAPTURE)
def test_a_capture_oom_stays_a_capture_oom(name):
    report = _report(name)
    assert report.primary.id == "cuda_graph_capture_oom"
    ledger = build_ledger(report.run)
    assert ledger.oom is not None and ledger.oom.phase == "cuda_graph"
    assert "during CUDA graph capture" in oom_sentence(ledger.oom, ledger.phase_words)


@pytest.mark.parametrize("name", SERVING)
def test_the_messages_graph_hint_decides_nothing(tmp_path, name):
    """Without "(e.g., CUDA Graphs)" in torch's message the same log reads the same."""
    text = (FIXTURES / f"{name}.log").read_text()
    log = tmp_path / "plain.log"
    log.write_text(text.replace(" allocated in private pools (e.g., CUDA Graphs)", " allocated in private pools"))
    plain, hinted = build_ledger(explain(log, options=Options(status=False)).run), build_ledger(_report(name).run)
    assert plain.oom is not None and hinted.oom is not None and plain.oom.phase == hinted.oom.phase == "serving"
