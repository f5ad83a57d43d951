"""Redaction: secrets and names become stable placeholders; what the diagnosis reads stays."""

from __future__ import annotations

import time

import pytest

from logforensics._redact import RedactionError, Redactor

HF = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"
SK = "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3"


def redact(*lines: str, **kwargs) -> tuple[list[str], Redactor]:
    r = Redactor(**kwargs)
    return r.redact_all(lines), r


@pytest.mark.parametrize("line,secret,kept", [
    (f"export HF_TOKEN={HF}", HF, "export HF_TOKEN="),
    (f"curl -H 'Authorization: Bearer {SK}'", SK, "Bearer <token-1>"),
    ("aws AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "aws <token-1>"),
    ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI",
     "aws_secret_access_key=<token-1>"),
    ("server_args=ServerArgs(api_key='letmein-42', port=30000)", "letmein-42", "api_key='<token-1>', port=30000"),
    ("python -m sglang.launch_server --api-key s3cr3t-value --port 30000", "s3cr3t-value",
     "--api-key <token-1> --port"),
    ("proxy https://bob:pa55word@proxy.corp.internal:3128", "pa55word", "://<user>:<token-1>@<host-1>:3128"),
    ("mail oncall.team@corp-mail.com now", "oncall.team@corp-mail.com", "mail <email-1> now"),
    ("Ray (SchedulerActor pid=42, ip=10.11.12.13) up", "10.11.12.13", "ip=<ip-1>)"),
    ("listening on [fd00:1234:5678::42]:30000", "fd00:1234:5678::42", "[<ipv6-1>]:30000"),
    ('File "/home/alice/venv/lib/python3.11/site-packages/x.py", line 3', "alice", "/home/<user>/venv"),
    ('File "/Users/bob/sglang/srt/server_args.py", line 3', "bob", "/Users/<user>/sglang"),
    ("connect to gpu-node-17.cluster.internal:29500", "gpu-node-17", "<host-1>:29500"),
])
def test_secret_is_replaced_and_the_line_still_reads(line, secret, kept):
    (out,), _ = redact(line)
    assert secret not in out
    assert kept in out


@pytest.mark.parametrize("line", [
    "Please install vllm by `pip install vllm==0.9.0.1` (sglang 0.5.23)",
    "server_args=ServerArgs(host='0.0.0.0', port=30000, api_key=None, dist_init_addr=None)",
    "[2026-01-01 10:00:00 TP0] Decode batch. #running-req: 1, #token: 1234, token usage: 0.01",
    "Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
    "see https://huggingface.co/Qwen/Qwen3-8B and https://pytorch.org/docs/stable/notes/cuda.html",
    "terminate called after throwing an instance of 'c10::Error' at ::1 14:02:10",
    'File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 3342, in run_event_loop',
    "sglang.srt.managers.scheduler model.safetensors config.json kernel.cu setup.py",
    "{'eos_token': '</s>', 'bos_token_id': 1, 'tokenizer_mode': 'auto'}",
    "    self.req_to_token = torch.zeros(",  # code, not a secret
    "    return await self.app(scope, receive, send)",  # code, not a host
    "loaded model.dev.id from cache",
])
def test_what_the_diagnosis_reads_is_kept(line):
    (out,), r = redact(line)
    assert out == line
    assert r.summary() == []


def test_placeholders_are_stable_and_counted():
    out, r = redact("rank 0 at 10.0.0.5 and 10.0.0.6", "rank 1 cannot reach 10.0.0.5:29500")
    assert out == ["rank 0 at <ip-1> and <ip-2>", "rank 1 cannot reach <ip-1>:29500"]
    (ips,) = r.summary()
    assert (ips.kind, ips.distinct, ips.count, ips.placeholders) == ("ipv4", 2, 3, ("<ip-1>", "<ip-2>"))


def test_names_learned_from_a_context_are_replaced_everywhere_even_earlier():
    out, _ = redact("[W socket.cpp] connect to trn-node-03 failed",
                    "alice@trn-node-03:~/sglang$ python -m sglang.launch_server",
                    "trn-node-03:1234:1234 [0] NCCL INFO Bootstrap : Using eth0")
    assert out == ["[W socket.cpp] connect to <host-1> failed",
                   "<user>@<host-1>:~/sglang$ python -m sglang.launch_server",
                   "<host-1>:1234:1234 [0] NCCL INFO Bootstrap : Using eth0"]


def test_a_plain_word_host_is_replaced_only_where_a_context_names_it():
    out, _ = redact("MASTER_ADDR=sglang", "from sglang.srt import server_args")
    assert out == ["MASTER_ADDR=<host-1>", "from sglang.srt import server_args"]


def test_no_redact_keeps_everything_but_the_users_own_patterns():
    (out,), r = redact(f"token {HF} project-atlas at 10.1.2.3", patterns=[r"project-\w+"], enabled=False)
    assert out == f"token {HF} <redacted-1> at 10.1.2.3"
    assert [s.kind for s in r.summary()] == ["custom"]


def test_a_bad_or_backtracking_user_regex_is_a_usage_error():
    with pytest.raises(RedactionError, match="not a valid regex"):
        Redactor(["(unclosed"])
    with pytest.raises(RedactionError, match="too slow"):
        Redactor([r"(a+)+$"]).redact("a" * 5000 + "!")


def test_redaction_is_linear_on_hostile_lines():
    hostile = ["a-" * 50_000, "1." * 50_000, "a@" * 50_000, "x:" * 50_000, "token=" * 20_000,
               "/home/" * 20_000, "[a]:" * 20_000]
    r = Redactor()
    start = time.process_time()  # this process's CPU: a loaded machine does not inflate it
    r.redact_all(hostile)
    assert time.process_time() - start < 60  # linear takes well under a second; quadratic, hours
