"""Stage 3 — events: a table of line rules turns known lines into typed events.

Each rule is data: an event kind, a cheap literal test (``starts`` or ``contains``) that runs
before any regular expression, and a regex whose named groups become the event's fields
(numbers become ints/floats, ``True``/``False`` bools). Lines no rule claims pass through as
kind ``"line"``. To teach logx a new line, add a ``Rule`` to ``RULES``.

The formats come from SGLang's source across releases 0.4.6–0.5.23 (see
``shared/reference/sglang-log-format.md``); regexes accept every release's wording.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .lines import LogLine

if TYPE_CHECKING:
    from .tracebacks import Traceback


@dataclass(slots=True)
class Event:
    """A typed fact read from one line (or, for ``kind == "traceback"``, from a block)."""

    kind: str
    line: LogLine
    fields: dict[str, Any] = field(default_factory=dict)
    traceback: Traceback | None = None

    @property
    def number(self) -> int:
        return self.line.number


@dataclass(frozen=True, slots=True)
class Rule:
    """One line rule. ``starts``: the message starts with this literal; ``contains``: the
    message contains it. ``pattern`` (searched from the start when ``starts`` is set) yields
    the fields; ``parse`` post-processes them."""

    kind: str
    pattern: str | None = None
    starts: str | None = None
    contains: str | None = None
    parse: Callable[[re.Match[str], str], dict[str, Any]] | None = None

    def compiled(self) -> re.Pattern[str] | None:
        return re.compile(self.pattern) if self.pattern else None


_NUM = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def convert(value: str | None) -> Any:
    """Turn a captured text into the value it denotes (int, float, bool, None or str)."""
    if value is None:
        return None
    if _NUM.fullmatch(value):
        return float(value) if ("." in value or "e" in value or "E" in value) else int(value)
    if value in ("True", "False"):
        return value == "True"
    if value == "None":
        return None
    return value


def _groups(m: re.Match[str], _msg: str) -> dict[str, Any]:
    return {k: convert(v) for k, v in m.groupdict().items() if v is not None}


# "#running-req: 7", "token usage: 0.12", "gen throughput (token/s): 80.79" -> gen_throughput
# Every repetition that a search could restart at each position is bounded: a hostile 1 MB
# line must cost linear time (the standard ``re`` module has no timeout).
_KV_PAIR = re.compile(r"(#?[a-z_][\w -]{0,63}?)(?: \(token/s\))?(?:=|: )(-?[\d.]+|True|False|None)\b")


def _pairs(m: re.Match[str], msg: str) -> dict[str, Any]:
    """Fields of a ``key=value, key: value`` stats line (batch lines, budget lines)."""
    out = _groups(m, msg)
    for key, value in _KV_PAIR.findall(msg):
        name = key.strip().lstrip("#").replace("-", "_").replace(" ", "_")
        out.setdefault(name, convert(value))
    return out


# server_args: "ServerArgs(model_path='x', tp_size=2, …)" (≤0.5.18) or "{'model_path': 'x', …}"
_ARG_REPR = re.compile(
    r"(\w{1,128})=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|\{[^}]*\}|[^,()]*(?:\([^()]*\))?)"
)
_ARG_DICT = re.compile(
    r"'(\w+)': ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\[[^\]]*\]|\{[^}]*\}|[^,{}\[\]]*)"
)


def parse_arg_value(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return convert(text)


def _server_args(m: re.Match[str], msg: str) -> dict[str, Any]:
    body = m.group("body")
    pairs = (_ARG_DICT if m.group("form") == "{" else _ARG_REPR).findall(body)
    return {
        "form": "dict" if m.group("form") == "{" else "repr",
        "args": {k: parse_arg_value(v) for k, v in pairs},
    }


def _warning(m: re.Match[str], msg: str) -> dict[str, Any]:
    return {"text": msg[:500]}


RULES: tuple[Rule, ...] = (
    # — launch —
    Rule("server_args", r"server_args=(?P<form>ServerArgs\(|\{)(?P<body>.*)",
         starts="server_args=", parse=_server_args),
    # (before launch_command: both lines also name "python -m sglang.launch_server")
    Rule("launch_banner", r"'python -m sglang\.launch_server' is still supported",
         contains="is still supported"),
    Rule("killed", r"(?:^\[\d+\][+-]?\s+|line \d+:\s+(?P<pid>\d+) )Killed\b(?P<rest>.*)",
         contains=" Killed"),
    Rule("launch_command", r"(?:python[\d.]*\s+-m\s+sglang\.launch_server|sglang serve)\b",
         contains="sglang"),
    Rule("sglang_version", r"(?:sglang version: |sglang: |sglang==)v?(?P<version>\d+\.\d+\.\d+\w*)",
         contains="sglang"),
    # — distributed init —
    Rule("dist_init_begin", r"Init (?:torch distributed|parallel) begin", starts="Init "),
    Rule("dist_init_end",
         r"Init (?:torch distributed|parallel) ends\.(?: elapsed=(?P<elapsed>[\d.]+) s)?,?"
         r"(?: mem usage=(?P<mem_usage_gb>-?[\d.]+) GB)?", starts="Init "),
    Rule("memory_baseline", r"Memory baseline taken\. mem usage=(?P<mem_usage_gb>-?[\d.]+) GB",
         starts="Memory baseline"),
    Rule("mem_unbalanced", r"The memory capacity is unbalanced", starts="The memory capacity",
         parse=_pairs),
    # — weights —
    Rule("weight_load_begin", r"Load weight begin\.(?: avail mem=(?P<avail_gb>[\d.]+) GB)?",
         starts="Load weight begin"),
    Rule("weight_load_end",
         r"Load weight end\. (?:elapsed=(?P<elapsed>[\d.]+) s, )?type=(?P<model_class>\w+), "
         r"(?:dtype=(?P<dtype>[\w.]+), )?(?:(?P<quant>quant=[^\n]*?), )?"
         r"avail mem=(?P<avail_gb>[\d.]+) GB(?:, mem usage=(?P<mem_usage_gb>-?[\d.]+) GB)?",
         starts="Load weight end"),
    Rule("weight_load_end",
         r"Load weight end\. Committed real weights after CUDA graph capture in (?P<elapsed>[\d.]+) s",
         starts="Load weight end"),
    # — memory pools —
    Rule("kv_cache_alloc",
         r"(?:(?P<label>[\w -]{1,64}?) )?KV Cache (?:is allocated|VA upper bound|allocated)\. "
         r"(?:dtype: (?P<dtype>[\w.]+), )?#tokens: (?P<tokens>\d+), "
         r"(?:K size: (?P<k_gb>[\d.]+) GB, V size: (?P<v_gb>[\d.]+) GB|KV size: (?P<kv_gb>[\d.]+) GB)",
         contains="KV Cache"),
    Rule("kv_cache_alloc",
         r"Post-capture KV sizing: KV cache allocated\. (?:dtype: (?P<dtype>[\w.]+), )?"
         r"#tokens: (?P<tokens>\d+), KV size: (?P<kv_gb>[\d.]+) GB(?:, avail mem=(?P<avail_gb>[\d.]+) GB)?",
         starts="Post-capture KV sizing: KV cache"),
    Rule("mamba_cache_alloc",
         r"Mamba Cache is allocated\. (?:max_mamba_cache_size: (?P<max_mamba_cache_size>\d+), )?"
         r"conv_state size: (?P<conv_gb>[\d.]+) ?GB, ssm_state size: (?P<ssm_gb>[\d.]+) ?GB"
         r"(?:,? ?intermediate_ssm_state_cache size: (?P<inter_ssm_gb>[\d.]+) ?GB)?"
         r"(?:,? ?intermediate_conv_window_cache size: (?P<inter_conv_gb>[\d.]+) ?GB)?",
         starts="Mamba Cache"),
    Rule("swa_pool",
         r"Use sliding window memory pool(?: \(all SWA\))?\. "
         r"(?:full_layer_tokens=(?P<full_tokens>\d+), )?swa_layer_tokens=(?P<swa_tokens>\d+)",
         starts="Use sliding window"),
    Rule("hicache_alloc", r"Allocating (?:(?P<gb>[\d.]+) GB host memory for hierarchical|"
         r".*?hierarchical KV host pool: (?P<tokens>\d+) tokens, (?P<gb2>[\d.]+) GB)",
         starts="Allocating"),
    Rule("memory_pool_end", r"Memory pool end\. avail mem=(?P<avail_gb>[\d.]+) GB",
         starts="Memory pool end"),
    # — CUDA graphs —
    Rule("cuda_graph_begin",
         r"Capture (?P<name>.*?)(?:cuda|CUDA|cpu|CPU|npu|NPU|XPU|piecewise CUDA) graph begin\."
         r"(?:.*?avail mem=(?P<avail_gb>[\d.]+) GB)?", starts="Capture "),
    Rule("cuda_graph_end",
         r"Capture (?P<name>.*?)(?:cuda|CUDA|cpu|CPU|npu|NPU|XPU|piecewise CUDA) graph end\."
         r"(?=(?:.*?(?:Time elapsed: |elapsed=)(?P<elapsed>[\d.]+) s)?)"
         r"(?=(?:.*?mem usage=(?P<mem_usage_gb>-?[\d.]+) GB)?)"
         r"(?:.*?avail mem=(?P<avail_gb>[\d.]+) GB)?", starts="Capture "),
    Rule("cuda_graph_progress",
         r"Capturing batches \((?:bs=(?P<bs>\d+) )?avail_mem=(?P<avail_gb>[\d.]+) GB\)"
         r"(?::\s+(?P<percent>\d+)%)?", starts="Capturing batches"),
    Rule("cuda_graph_failed", r"Capture (?:cuda|CUDA) graph failed: ?(?P<error>.*)",
         contains="graph failed"),
    # — ready —
    Rule("scheduler_budget", r"max_total_num_tokens=(?P<max_total_num_tokens>\d+)",
         starts="max_total_num_tokens=", parse=_pairs),
    Rule("startup_timings", r"Engine startup timings", starts="Engine startup", parse=_pairs),
    Rule("server_started", r"Started server process \[(?P<pid>\d+)\]", starts="Started server"),
    Rule("uvicorn_running", r"Uvicorn running on (?P<url>\S+)", starts="Uvicorn running"),
    Rule("ready", r"The server is fired up and ready to roll", starts="The server is fired"),
    # — serving —
    Rule("prefill_batch", r"Prefill batch(?: \[(?P<iter>\d+)\])?[.,] ", starts="Prefill batch",
         parse=_pairs),
    Rule("decode_batch", r"Decode batch(?: \[(?P<iter>\d+)\])?[.,] ", starts="Decode batch",
         parse=_pairs),
    # --log-requests: "Receive: obj=GenerateReqInput(…)", "Finish: obj=…, out={…}" (user content)
    Rule("request_log", r"(?P<verb>Receive|Finish): obj=", starts="Receive: obj="),
    Rule("request_log", r"(?P<verb>Receive|Finish): obj=", starts="Finish: obj="),
    Rule("access_log",
         r"(?P<client>\S{1,256}) - \"(?P<method>[A-Z]{1,16}) (?P<path>\S{1,4096}) HTTP/[\d.]{1,8}\" (?P<status>\d{3})",
         contains='HTTP/'),
    Rule("max_running_capped",
         r"max_running_requests is capped to (?P<max_running_requests>\d+) by the mamba state cache "
         r"\(max_mamba_cache_size=(?P<max_mamba_cache_size>\d+), (?P<slots_per_req>\d+) state slots",
         starts="max_running_requests is capped"),
    Rule("input_too_long",
         r"Input length \((?P<input_tokens>\d+) tokens\) exceeds the maximum allowed length "
         r"\((?P<max_tokens>\d+) tokens\)", starts="Input length ("),
    Rule("input_too_long",
         r"The input \((?P<input_tokens>\d+) tokens\) is longer than the model's context length "
         r"\((?P<max_tokens>\d+) tokens\)", starts="The input ("),
    Rule("kv_retract", r"KV cache pool is full\. Retract requests\. #retracted_reqs: (?P<n>\d+)",
         starts="KV cache pool is full", parse=_pairs),
    Rule("kv_retract", r"Decode out of memory happened\. #retracted_reqs: (?P<n>\d+)",
         starts="Decode out of memory happened", parse=_pairs),
    # — failure and end of life —
    # argparse: "usage: prog [-h] …" then "prog: error: unrecognized arguments: --x"
    Rule("argparse_usage", r"usage: (?P<prog>\S+) \[", starts="usage: "),
    Rule("argparse_error", r"^(?:(?P<prog>[\w.-]{1,64}): )?error: (?P<error>.+)", contains="error: "),
    Rule("health_check_failed",
         r"Health check failed\.(?: Server couldn't get a response from (?P<component>\w+) "
         r"for last (?P<timeout>\d+) seconds)?", starts="Health check failed"),
    Rule("kv_transfer_failed",
         r"(?P<side>Prefill|Decode) transfer failed for request(?: rank=(?P<rank>\d+))?"
         r".*?(?: with exception (?P<error>.*))?$", starts="Decode transfer failed"),
    Rule("kv_transfer_failed",
         r"(?P<side>Prefill|Decode) transfer failed for request(?: rank=(?P<rank>\d+))?"
         r".*?(?: with exception (?P<error>.*))?$", starts="Prefill transfer failed"),
    # vLLM's platform probe (vLLM is imported by SGLang's quantization and kernels too)
    Rule("platform_missing", r"No platform detected, vLLM is running on (?P<platform>\w+)",
         contains="No platform detected"),
    Rule("cuda_error", r"Failed: Cuda error (?P<location>\S+) '(?P<error>[^']*)", starts="Failed: Cuda error"),
    Rule("component_exception", r"(?P<component>\w{1,64}) hit an exception", contains="hit an exception"),
    Rule("sigquit_child", r"Received sigquit from a child proc", starts="Received sigquit"),
    Rule("sigquit_running", r"SIGQUIT received\.", starts="SIGQUIT received"),
    Rule("sigterm", r"SIGTERM received\.", starts="SIGTERM received"),
    Rule("rank_dead", r"Rank (?P<rank>\d+) scheduler is dead", starts="Rank "),
    Rule("rank_died",
         r"(?:RuntimeError: )?Rank (?P<rank>\d+) scheduler died during initialization "
         r"\(exit code: (?P<exit_code>-?\d+|None)\)", contains="scheduler died during"),
    Rule("exit_code", r"Exit code: (?P<exit_code>-?\d+)", starts="Exit code:"),
    Rule("subprocess_crashed",
         r"Subprocess (?P<name>\S+) \(pid=(?P<pid>\d+)\) crashed with exit code (?P<exit_code>-?\d+)",
         starts="Subprocess "),
    Rule("killed", r"Killed\b(?P<rest>.*)", starts="Killed"),
    Rule("watchdog_timeout",
         r"(?P<component>\w{1,64} )?[Ww]atchdog timeout \(self\.watchdog_timeout=(?P<timeout>[\d.]+)",
         contains="atchdog timeout"),
    Rule("kill_process_tree",
         r"kill_process_tree called: parent_pid=(?P<parent_pid>\d+|None), "
         r"include_parent=(?P<include_parent>True|False)", starts="kill_process_tree"),
    Rule("warmup_failed", r"Initialization failed\. warmup error", starts="Initialization failed"),
    Rule("init_failed", r"Initialization failed\. Please see the error messages above",
         contains="Initialization failed. Please see"),
    Rule("shutdown", r"(?:Shutting down|Finished server process \[(?P<pid>\d+)\])",
         starts="Shutting down"),
    Rule("shutdown", r"Finished server process \[(?P<pid>\d+)\]", starts="Finished server"),
    # — warnings (last: anything more specific wins) —
    Rule("warning", r"(?:WARNING|Warning: |warnings\.warn)", contains="arning",
         parse=_warning),
)


# A line no rule knows that reports a failure: its level says so (logging's ERROR, glog's E/F),
# or its words do ("CUresult error", "Server warmup failed; aborting startup: …", "undefined
# symbol"). Such a line is kept as kind "error_line": the catalog's line patterns see every
# line anyway, but a failure announced only in words is never noise, and the traceback
# assembler reads it like a plain line (an exception line or a wrapped message may be one).
ERROR_LEVELS = frozenset({"ERROR", "FATAL", "CRITICAL"})
_FAILURE_WORDS = re.compile(
    r"(?i:\berrors?\b|\bfail(?:ed|ure|s)?\b|\babort(?:ed|ing)?\b|\bfatal\b)|undefined symbol|"
    r"cannot open shared object")
# Kinds the traceback assembler may fold into a traceback (a message line, a headless start).
PLAIN_KINDS = frozenset({"line", "warning", "error_line"})


class Tokenizer:
    """Applies ``RULES`` to lines. Rules with ``starts`` are indexed by the first word of
    the literal so a line is tested only against rules that can match it."""

    def __init__(self, rules: tuple[Rule, ...] = RULES):
        self._by_word: dict[str, list[tuple[Rule, re.Pattern[str] | None]]] = {}
        self._contains: list[tuple[Rule, re.Pattern[str] | None]] = []
        for rule in rules:
            entry = (rule, rule.compiled())
            if rule.starts is not None:
                self._by_word.setdefault(_first_word(rule.starts), []).append(entry)
            else:
                self._contains.append(entry)

    def tokenize(self, line: LogLine) -> Event:
        msg = line.message
        if msg:
            for rule, rx in self._by_word.get(_first_word(msg), ()):
                if msg.startswith(rule.starts):  # type: ignore[arg-type]
                    event = _apply(rule, rx, msg, line)
                    if event is not None:
                        return event
            for rule, rx in self._contains:
                if rule.contains in msg:  # type: ignore[operator]
                    event = _apply(rule, rx, msg, line)
                    if event is not None:
                        return event
        if line.level == "WARNING":
            return Event("warning", line, {"text": msg[:500]})
        if line.level in ERROR_LEVELS or (msg and _FAILURE_WORDS.search(msg)):
            return Event("error_line", line, {"text": msg[:500]})
        return Event("line", line)


def _first_word(text: str) -> str:
    end = text.find(" ")
    word = text if end < 0 else text[:end]
    return word.split("=", 1)[0] if "=" in word else word


def _apply(rule: Rule, rx: re.Pattern[str] | None, msg: str, line: LogLine) -> Event | None:
    if rx is None:
        return Event(rule.kind, line)
    m = rx.match(msg) if rule.starts is not None else rx.search(msg)
    if m is None:
        return None
    parse = rule.parse or _groups
    return Event(rule.kind, line, parse(m, msg))


_default: Tokenizer | None = None


def tokenize(line: LogLine) -> Event:
    """Tokenize one line with the default rule table."""
    global _default
    if _default is None:
        _default = Tokenizer()
    return _default.tokenize(line)
