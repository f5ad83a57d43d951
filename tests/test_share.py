"""``logx share``: short, redacted, and the excerpt diagnoses what the whole log does."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import CORPUS, FIXTURES, REPO, logx, make_catalog

from logforensics._analysis import Options, explain
from logforensics._catalog import load_catalog
from logforensics._redact import Redactor
from logforensics._share import MAX_OUTPUT_LINES, block_size, build_share, root_cause_id

CATALOG = load_catalog()
FIXTURE_LOGS = sorted(FIXTURES.glob("**/*.log"))
CORPUS_LOGS = sorted(CORPUS.glob("**/*.log"))

# Secrets planted into copies of the fixtures, where real logs carry them: home directories in
# every traceback frame, and a server_args dump holding a host, a token, keys and addresses.
PLANTED = {
    "user": "alice", "user2": "bob.smith",
    "host": "gpu-node-17.cluster.internal", "ip": "10.11.12.13", "ipv6": "fd00:1234:5678::42",
    "email": "oncall.team@corp-mail.com",
    "hf": "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7", "sk": "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3",
    "aws": "AKIAIOSFODNN7EXAMPLE",
}


def plant(text: str) -> str:
    p = PLANTED
    extra = {"host": p["host"], "hf_token": p["hf"], "api_key": p["sk"], "owner": p["email"],
             "aws_access_key_id": p["aws"], "advertise": p["ipv6"], "dist_init_addr": f"{p['ip']}:5000"}
    text = text.replace("/sgl-workspace/", f"/home/{p['user']}/sgl-workspace/")
    text = text.replace("/usr/local/lib/", f"/Users/{p['user2']}/lib/")
    text = text.replace("'host': '0.0.0.0'", ", ".join(f"'{k}': '{v}'" for k, v in extra.items()))
    return text.replace("host='0.0.0.0'", ", ".join(f"{k}='{v}'" for k, v in extra.items()))


def code_block(markdown: str) -> str:
    """The excerpt's fenced block, as a reader would copy it."""
    m = re.search(r"^(`{3,})text\n(.*?)^\1$", markdown, re.S | re.M)
    assert m, "no code block"
    return m.group(2)


def diagnosis(data: bytes | str) -> str:
    source = data.encode() if isinstance(data, str) else data
    return root_cause_id(explain(source, options=Options(status=False), catalog=CATALOG))


def check_share(path, data: bytes | None = None):
    data = path.read_bytes() if data is None else data
    shared = build_share(data, name=str(path), catalog=CATALOG)
    markdown = shared.markdown()
    assert len(markdown.splitlines()) <= MAX_OUTPUT_LINES
    # (``shared.expected``: the whole log's explained answer, which build_share read already)
    assert diagnosis(code_block(markdown)) == shared.expected == shared.rediagnosed
    return shared, markdown


@pytest.mark.parametrize("path", FIXTURE_LOGS, ids=[p.name for p in FIXTURE_LOGS])
def test_fixture_excerpt_is_short_and_rediagnoses_the_same(path):
    check_share(path)


@pytest.mark.skipif(not CORPUS_LOGS, reason=f"field corpus not found at {CORPUS}")
def test_field_corpus_excerpts_rediagnose_the_same():
    for path in CORPUS_LOGS:
        check_share(path)


@pytest.mark.parametrize("path", FIXTURE_LOGS, ids=[p.name for p in FIXTURE_LOGS])
def test_planted_secrets_never_leak_and_the_diagnosis_survives(path):
    data = plant(path.read_text(encoding="utf-8", errors="replace")).encode()
    _, markdown = check_share(path, data)
    leaked = [name for name, secret in PLANTED.items() if secret in markdown]
    assert not leaked, leaked
    assert "/home/<user>/" in markdown or "/home/" not in markdown


def test_the_planted_secrets_reach_the_excerpt_unredacted():
    """Without redaction every planted secret shows in some fixture's excerpt: the leak test
    above is not vacuous."""
    seen: set[str] = set()
    for path in FIXTURE_LOGS:
        data = plant(path.read_text(encoding="utf-8", errors="replace")).encode()
        markdown = build_share(data, name=path.name, catalog=CATALOG, redactor=Redactor(enabled=False)).markdown()
        seen |= {name for name, secret in PLANTED.items() if secret in markdown}
        if seen == set(PLANTED):
            break
    assert seen == set(PLANTED)


def test_a_large_log_gives_a_short_excerpt_of_the_lines_that_matter(tmp_path):
    log = tmp_path / "big.log"
    subprocess.run([sys.executable, str(REPO / "bench" / "gen_log.py"), str(log), "--size", "4MB"],
                   check=True, capture_output=True)
    shared, markdown = check_share(log)
    assert shared.lines > 20_000
    assert len(shared.excerpt) < 100
    block = code_block(markdown)
    assert "RuntimeError: Decode out of memory" in block and "server_args=" in block
    assert re.search(r"^\[… [\d,]+ lines …\]$", block, re.M)


def test_gaps_are_counted_in_lines_and_json_accounts_for_every_line():
    path = FIXTURES / "cuda_graph_capture_oom__target_decode_0_5_23.log"
    shared = build_share(path, catalog=CATALOG)
    data = shared.to_json()
    assert data["schema"] == "logx.share/1"
    assert data["root_cause"]["id"] == "cuda_graph_capture_oom"
    assert data["rediagnosis"] == {"root_cause": "cuda_graph_capture_oom", "same": True}
    covered = sum(item.get("gap", 0) + ("line" in item) for item in data["excerpt"])
    assert covered == data["lines"] == shared.lines
    assert block_size([n for n, _ in shared.excerpt], shared.lines) == len(shared.block_lines())
    assert data["memory"]["columns"] == ["step", "TP0"] and data["memory"]["rows"]


def test_deep_traceback_middle_frame_comes_back_when_the_diagnosis_needs_it():
    """A pattern on a frame in the middle of a long traceback (logx keeps only its ends as
    evidence): the first excerpt misses it, the re-check adds the traceback's middle."""
    frames = [f'  File "/app/mod{i}.py", line {i}, in f{i}\n    step()\n' for i in range(40)]
    frames[15] = '  File "/app/plugins/rare_plugin.py", line 7, in load\n    step()\n'
    log = ("[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
           "[2026-01-01 10:00:05] Scheduler hit an exception: Traceback (most recent call last):\n"
           + "".join(frames) + "RuntimeError: boom\n").encode()
    catalog = make_catalog({"id": "rare_plugin_failed", "match": {"frame": "rare_plugin"}})
    assert root_cause_id(explain(log, options=Options(status=False), catalog=catalog)) == "rare_plugin_failed"
    shared = build_share(log, catalog=catalog)
    assert shared.same
    assert "rare_plugin.py" in shared.block_text()


def test_cli_writes_markdown_json_and_files(tmp_path):
    path = FIXTURES / "spec_decode_radix_mamba_no_buffer__tail5_cut.log"
    res = logx("share", path)
    assert res.returncode == 0 and res.stdout.decode().startswith("### logx: FAILED")
    data = json.loads(logx("share", "--json", path).stdout)
    assert data["root_cause"]["id"] == "spec_decode_radix_mamba_no_buffer"
    out = tmp_path / "report.md"
    res = logx("share", path, "--out", out)
    assert res.returncode == 0 and res.stdout == b"" and b"same root cause" in res.stderr
    assert out.read_text().startswith("### logx: FAILED")
    res = logx("share", "-", stdin=path.read_bytes())
    assert res.returncode == 0 and "spec_decode_radix_mamba_no_buffer" in res.stdout.decode()


def test_cli_redaction_switches(tmp_path):
    log = tmp_path / "s.log"
    log.write_text("[2026-01-01 10:00:00] Started by 10.9.9.9\n"  # not cited: not shown, not counted
                   "RuntimeError: cannot reach 10.11.12.13 for project-atlas\n")
    plain = logx("share", log).stdout.decode()
    assert "10.11.12.13" not in plain and "<ip-1>" in plain and "1 IPv4 address → `<ip-1>` (1×)" in plain
    kept = logx("share", "--no-redact", "--redact", r"project-\w+", log).stdout.decode()
    assert "10.11.12.13" in kept and "project-atlas" not in kept and "<redacted-1>" in kept
    res = logx("share", "--redact", "(bad", log)
    assert res.returncode == 2 and b"not a valid regex" in res.stderr and b"Traceback" not in res.stderr
