"""tools/index_sglang_flags.py: the flag spellings of a release, from both ways SGLang has
defined its arguments (add_argument calls; Annotated dataclass fields since 0.5.14)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from index_sglang_flags import spellings_of_source  # noqa: E402

OLD_STYLE = '''
def add_cli_args(parser):
    parser.add_argument("--tp-size", "--tensor-parallel-size", type=int, dest="tp_size")
    parser.add_argument("--mamba-scheduler-strategy", type=str)
    parser.add_argument("--stream-output", action=DeprecatedAliasStoreAction, dest="incremental_streaming_output")
'''
NEW_STYLE = '''
class ServerArgs:
    tp_size: A[int, Arg(help="tp", aliases=["--tensor-parallel-size"])] = 1
    mamba_radix_cache_strategy: A[str, "how the mamba state is cached"] = "auto"
    cuda_graph_max_bs_decode: A[int, Arg(cli_name="--cuda-graph-max-bs-decode")] = 0
    hidden: A[int, Arg(no_cli=True)] = 0
    plain: int = 0
'''


def test_add_argument_flags_and_their_fields():
    assert spellings_of_source(OLD_STYLE) == [
        ("--tp-size", "tp_size", True), ("--tensor-parallel-size", "tp_size", True),
        ("--mamba-scheduler-strategy", "mamba_scheduler_strategy", True),
        ("--stream-output", "incremental_streaming_output", False)]  # a deprecated alias is not a name


def test_dataclass_fields_with_cli_metadata_only():
    assert spellings_of_source(NEW_STYLE) == [
        ("--tp-size", "tp_size", True), ("--tensor-parallel-size", "tp_size", True),
        ("--mamba-radix-cache-strategy", "mamba_radix_cache_strategy", True),
        ("--cuda-graph-max-bs-decode", "cuda_graph_max_bs_decode", True)]
