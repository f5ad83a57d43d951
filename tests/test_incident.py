"""Several node logs of one launch explained together (logforensics/_incident.py)."""

from __future__ import annotations

import io
import json
import pickle

import pytest
from conftest import FIXTURES, REPO, logx
from rich.console import Console

from logforensics._analysis import Options, explain
from logforensics._catalog import load_catalog
from logforensics._incident import (
    CLOCK_TOLERANCE,
    Failure,
    Incident,
    NodeSummary,
    explain_deployments,
    group,
    merge,
    summarize,
)
from logforensics._render.incident import render_incident

DEPLOYMENTS = FIXTURES / "deployments"
CASES = sorted(p for p in DEPLOYMENTS.iterdir() if p.is_dir())
CATALOG = load_catalog()
NO_STATUS = Options(status=False)  # snapshots must not depend on the checkout's mtimes

# case directory -> (root cause id, its node, its rank)
EXPECTED = {
    "cuda_illegal_memory_access__2node_nccl_timeouts": ("cuda_illegal_memory_access", 1, "TP12"),
    "argparse_error__4node_dist_init_wait": ("argparse_error", 2, ""),
    "forward_cuda_oom_activations__4node_one_rank": ("forward_cuda_oom_activations", 1, "TP6"),
    # vLLM's multiprocessing executor over two nodes; node 1 runs headless and prints no args
    "cuda_illegal_memory_access__vllm_2node_worker_tp11": ("cuda_illegal_memory_access", 1, "Worker_TP11"),
}


def deployment(case, jobs=1) -> tuple[Incident, list]:
    paths = [str(p.relative_to(REPO)) for p in sorted(case.glob("*.log"))]
    result = explain_deployments([str(REPO / p) for p in paths], jobs, options=NO_STATUS, catalog=CATALOG,
                                 names=paths)
    [item] = result.items
    assert isinstance(item, tuple), "the files were not recognised as one launch"
    return item


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_root_cause_node_and_rank_with_the_others_as_consequences(case):
    incident, reports = deployment(case)
    cause, node, stream = EXPECTED[case.name]
    root = incident.root
    assert (root.id, incident.node_rank_of(root.file), root.stream) == (cause, node, stream)
    assert incident.exit_code == 1 and not incident.uncertain and not incident.only_symptoms
    failed_elsewhere = {n.file for n in incident.nodes if n.failures and n.file != root.file}
    assert {c.file for c in incident.consequences} >= failed_elsewhere
    assert all(c.role == "symptom" for c in incident.consequences)
    assert len(reports) == len(incident.nodes) == len(list(case.glob("*.log")))


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_deployment_report_snapshot(case, snapshot):
    incident, reports = deployment(case)
    buffer = io.StringIO()
    render_incident(incident, reports, Console(file=buffer, width=100, color_system=None,
                                               force_terminal=False, highlight=False))
    assert buffer.getvalue() == snapshot(name="text")
    assert json.dumps(incident.to_json(reports), indent=1, sort_keys=True) == snapshot(name="json")


@pytest.mark.parametrize("name", ["forward_cuda_oom_activations__4node_one_rank",
                                  "cuda_illegal_memory_access__vllm_2node_worker_tp11"])
def test_worker_processes_give_the_same_incident(name):
    case = DEPLOYMENTS / name
    one, _ = deployment(case, jobs=1)
    two, _ = deployment(case, jobs=2)
    assert one.to_json([]) == two.to_json([])


def test_the_summary_is_small_and_picklable():
    case = DEPLOYMENTS / "cuda_illegal_memory_access__2node_nccl_timeouts"
    report = explain(case / "node0.log", catalog=CATALOG, options=NO_STATUS)
    summary = summarize(report)
    data = pickle.dumps(summary)
    assert pickle.loads(data) == summary
    assert len(data) < 4096 < len(pickle.dumps(report))


def test_separate_explains_each_file_alone():
    case = DEPLOYMENTS / "argparse_error__4node_dist_init_wait"
    result = explain_deployments(sorted(str(p) for p in case.glob("*.log")), 1, options=NO_STATUS,
                                 catalog=CATALOG, separate=True)
    assert [type(i).__name__ for i in result.items] == ["Report"] * 4


# — grouping ————————————————————————————————————————————————————————————————————————


def node(file, rank=0, *, nnodes=2, addr="10.0.0.1:5000", model="m", start="2026-01-01 10:00:00",
         end="2026-01-01 10:30:00", failures=(), ranks=()) -> NodeSummary:
    return NodeSummary(file=file, verdict="failed" if failures else "running", exit_code=1 if failures else 0,
                       phase="serving", model=model, nnodes=nnodes, node_rank=rank, dist_init_addr=addr,
                       tp_size=16, started_at=start, ended_at=end, ranks=ranks, failures=tuple(failures))


def argless(file, **kw) -> NodeSummary:
    base = node(file, **kw)
    return NodeSummary(**{**base.__dict__, "nnodes": None, "node_rank": None, "model": None,
                          "dist_init_addr": None})


def test_files_of_one_launch_are_grouped_and_the_rest_kept_apart():
    nodes = [node("a/node0.log", 0), node("x.log", 0, nnodes=1), node("a/node1.log", 1),
             node("b/node1.log", 1, addr="10.9.9.9:5000")]
    assert group(nodes) == [[0, 2], [1], [3]]


def test_same_args_but_times_apart_are_different_launches():
    later = node("n1.log", 1, start="2026-01-02 10:00:00", end="2026-01-02 10:05:00")
    assert group([node("n0.log", 0), later]) == [[0], [1]]


def test_the_same_node_rank_twice_is_not_one_launch():
    assert group([node("n0.log", 0), node("n0b.log", 0)]) == [[0], [1]]


def test_a_file_without_args_joins_its_siblings_only():
    nodes = [node("d/node0.log", 0), node("d/node1.log", 1), argless("d/node2.log"), argless("d/other.log")]
    assert group(nodes) == [[0, 1, 2], [3]]


# — the merge ———————————————————————————————————————————————————————————————————————


def failure(file, fid, at, role="cause", phase="serving", priority=60, stream="TP0") -> Failure:
    return Failure(id=fid, title=fid, role=role, phase=phase, priority=priority, file=file, stream=stream,
                   line=10, at=at, text=f"{fid} line")


def test_an_earlier_timeout_does_not_beat_a_later_cause():
    timeout = failure("n0.log", "nccl_collective_timeout", "2026-01-01 10:10:00", role="symptom")
    cause = failure("n1.log", "cuda_illegal_memory_access", "2026-01-01 10:12:00")
    incident = merge([node("n0.log", 0, failures=[timeout]), node("n1.log", 1, failures=[cause])])
    assert incident.root == cause and incident.consequences == [timeout]


def test_the_first_cause_in_time_wins():
    early = failure("n1.log", "early_error", "2026-01-01 10:05:00", priority=10)
    late = failure("n0.log", "late_error", "2026-01-01 10:06:00", priority=90)
    incident = merge([node("n0.log", 0, failures=[late]), node("n1.log", 1, failures=[early])])
    assert incident.root == early and incident.consequences == [late] and not incident.uncertain


def test_causes_closer_than_the_clock_tolerance_are_ordered_by_priority_then_phase_and_said_uncertain():
    t = "2026-01-01 10:05:0"
    assert CLOCK_TOLERANCE.total_seconds() > 4
    serving = failure("n0.log", "serving_error", t + "0", phase="serving")
    weights = failure("n1.log", "weights_error", t + "4", phase="weights")
    incident = merge([node("n0.log", 0, failures=[serving]), node("n1.log", 1, failures=[weights])])
    assert incident.root == weights and incident.uncertain == [serving]
    specific = failure("n0.log", "serving_error", t + "0", phase="serving", priority=80)
    incident = merge([node("n0.log", 0, failures=[specific]), node("n1.log", 1, failures=[weights])])
    assert incident.root == specific and incident.uncertain == [weights]


def test_a_cause_without_a_time_at_argument_parsing_is_placed_at_its_start():
    timeout = failure("n0.log", "multinode_dist_init_timeout", "2026-01-01 10:30:00", role="symptom")
    args = failure("n1.log", "argparse_error", None, phase="args", stream="")
    incident = merge([node("n0.log", 0, failures=[timeout]),
                      node("n1.log", 1, failures=[args], start=None, end=None)])
    assert incident.root == args
    [entry] = [e for e in incident.timeline if e.get("id") == "argparse_error"]
    assert entry["estimated"] and entry["at"] == "2026-01-01 10:00:00"


def test_only_symptoms_everywhere_names_the_first_and_says_so():
    a = failure("n0.log", "multinode_dist_init_timeout", "2026-01-01 10:30:05", role="symptom")
    b = failure("n1.log", "multinode_dist_init_timeout", "2026-01-01 10:30:00", role="symptom")
    incident = merge([node("n0.log", 0, failures=[a]), node("n1.log", 1, failures=[b])])
    assert incident.only_symptoms and incident.root == b and incident.consequences == [a]


def test_no_failure_anywhere_is_not_an_incident_failure():
    incident = merge([node("n0.log", 0), node("n1.log", 1)])
    assert incident.root is None and incident.verdict == "running" and incident.exit_code == 0


def test_node_rank_from_tp_ranks_and_the_one_left_over():
    incident = merge([node("n0.log", 0), argless("n1.log", ranks=("TP8", "TP9")), argless("n2.log")])
    assert incident.node_ranks == [0, 1, None]  # nnodes=2: node 2 has no rank left to take
    incident = merge([node("n0.log", 0), argless("n1.log")])
    assert incident.node_ranks == [0, 1]
    vllm = merge([node("n0.log", 0), argless("n1.log", ranks=("APIServer", "Worker_TP11", "Worker_TP12")),
                  argless("n2.log")])
    assert vllm.node_ranks == [0, 1, None]  # vLLM's worker processes name their TP rank too


def test_a_stream_is_shown_as_its_process():
    from logforensics._incident import process

    assert [process(s) for s in ("TP3", "DP1 TP3 EP3", "sglang|TP3", "Worker_TP3 pid=3321|", "")] == \
        ["TP3", "DP1 TP3 EP3", "TP3", "Worker_TP3", ""]


# — within one file: the same role mechanism ranks ranks ————————————————————————————————

ONE_NODE = b"""\
[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=2, nnodes=1, node_rank=0)
[2026-01-01 10:00:01 TP0] Init torch distributed begin.
[2026-01-01 10:00:01 TP1] Init torch distributed begin.
[rank1]:[W101 10:30:01.000000001 socket.cpp:487] [c10d] waitForInput: socket SocketImpl(fd=9, addr=[h]:4, \
remote=[h]:5000) timed out after 1800000ms
[2026-01-01 10:30:02 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl/python/sglang/srt/managers/scheduler.py", line 10, in run_scheduler_process
    raise ValueError("x")
ValueError: Unsupported architectures: FooForCausalLM. Model architectures ['FooForCausalLM'] are not supported for now.
"""


def test_one_ranks_error_outranks_another_ranks_dist_init_timeout():
    report = explain(ONE_NODE, catalog=CATALOG)
    ids = [f.id for f in report.findings if f.is_problem]
    assert ids.index("multinode_dist_init_timeout") > 0 and report.primary.id != "multinode_dist_init_timeout"


# — the command line ——————————————————————————————————————————————————————————————————


def test_cli_directory_is_one_deployment_with_the_deployments_exit_code():
    res = logx("explain", "--json", DEPLOYMENTS / "argparse_error__4node_dist_init_wait")
    data = json.loads(res.stdout)
    assert res.returncode == 1 and data["schema"] == "logx.incident/1"
    assert data["incident"]["root_cause"]["id"] == "argparse_error"
    assert [r["schema"] for r in data["reports"]] == ["logx.report/1"] * 4


def test_cli_unrelated_files_keep_the_array_of_reports_and_separate_forces_it():
    case = DEPLOYMENTS / "cuda_illegal_memory_access__2node_nccl_timeouts"
    unrelated = json.loads(logx("explain", "--json", FIXTURES / "none__healthy_tp1.log", case / "node0.log").stdout)
    assert [d["schema"] for d in unrelated] == ["logx.report/1"] * 2
    separate = json.loads(logx("explain", "--json", "--separate", case).stdout)
    assert [d["schema"] for d in separate] == ["logx.report/1"] * 2
    mixed = json.loads(logx("explain", "--json", FIXTURES / "none__healthy_tp1.log", case).stdout)
    assert [d["schema"] for d in mixed] == ["logx.report/1", "logx.incident/1"]


def test_cli_text_names_the_root_cause_node():
    case = DEPLOYMENTS / "cuda_illegal_memory_access__2node_nccl_timeouts"
    out = logx("explain", "--width", "120", case / "node0.log", case / "node1.log").stdout.decode()
    assert "deployment of 2 node logs" in out and "on node 1, TP12" in out
