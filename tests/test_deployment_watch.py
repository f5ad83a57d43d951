"""``logx watch node0.log node1.log``: a deployment's node logs followed together end with the
deployment's verdict, root cause and exit code, the same as ``logx explain`` on the same files."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from logforensics._analysis import Options
from logforensics._incident import explain_deployments
from logforensics._watch import WatchOptions, watch_many

DEPLOYMENTS = Path(__file__).resolve().parent.parent / "fixtures" / "deployments"


def _watch(paths: list[str], **opts) -> tuple[int, list[dict]]:
    out = io.StringIO()
    code = watch_many(paths, WatchOptions(mode="json", timeout=20, **opts), out=out)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.parametrize("deployment", sorted(p.name for p in DEPLOYMENTS.iterdir()))
def test_watching_node_logs_together_gives_explains_deployment_verdict(deployment):
    paths = sorted(str(p) for p in (DEPLOYMENTS / deployment).glob("*.log"))
    code, objs = _watch(paths, until="ready")
    end = objs[-1]
    [(incident, _reports)] = explain_deployments(paths, options=Options(status=True), names=paths).items
    assert end["deployment"] is True
    assert (code, end["exit_code"], end["verdict"]) == (incident.exit_code, incident.exit_code, incident.verdict)
    got, want = end["incident"]["root_cause"], incident.root.to_json(incident.node_rank_of(incident.root.file))
    keys = ("id", "file", "line", "stream")
    assert [got[k] for k in keys] == [want[k] for k in keys]
    assert deployment.startswith(got["id"])
    files = {o["file"] for o in objs[:-1]}
    assert files == set(paths)  # every update says which node log it is from


def test_files_of_no_deployment_end_with_the_worst_code():
    paths = [str(DEPLOYMENTS.parent / "none__healthy_dp2_attention.log"),
             str(DEPLOYMENTS.parent / "cuda_graph_capture_oom__interleaved_ranks.log")]
    code, objs = _watch(paths, until="ready")
    assert code == 1 and objs[-1]["deployment"] is False
    assert [f["exit_code"] for f in objs[-1]["files"]] == [0, 1]
