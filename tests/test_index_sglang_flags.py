"""tools/index_sglang_flags.py: the flag spellings of a release, from both ways SGLang has
defined its arguments (add_argument calls; Annotated dataclass fields since 0.5.14)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from index_sglang_flags import REPLACED, expand_braces, settings_of, spellings_of_source  # noqa: E402

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



DEPRECATED_WITH_REPLACEMENT = '''
def add_deprecated(parser):
    parser.add_argument("--disable-cuda-graph", action=DeprecatedStoreTrueAction,
                        new_flag="--cuda-graph-backend-{decode,prefill}=disabled")
    parser.add_argument("--disable-piecewise-cuda-graph", action=DeprecatedStoreConstAction,
                        dest="cuda_graph_backend_prefill", new_flag="--cuda-graph-backend-prefill=disabled")
'''
OLD_FLAGS = [("--disable-cuda-graph", "disable_cuda_graph", True),
             ("--disable-piecewise-cuda-graph", "disable_piecewise_cuda_graph", True)]
NEW_FLAGS = [("--cuda-graph-backend-decode", "cuda_graph_backend_decode", True),
             ("--cuda-graph-backend-prefill", "cuda_graph_backend_prefill", True)]


def test_a_deprecated_spelling_is_linked_to_the_replacement_its_warning_names():
    """Its own field is often ``no_cli`` (``disable_cuda_graph``), or the new field that several
    old flags now set to different values: each old flag gets the replacement it names."""
    rows = spellings_of_source(DEPRECATED_WITH_REPLACEMENT)
    assert rows == [
        ("--disable-cuda-graph", REPLACED + "--disable-cuda-graph", False),
        ("--cuda-graph-backend-decode=disabled --cuda-graph-backend-prefill=disabled",
         REPLACED + "--disable-cuda-graph", True),
        ("--disable-piecewise-cuda-graph", REPLACED + "--disable-piecewise-cuda-graph", False),
        ("--cuda-graph-backend-prefill=disabled", REPLACED + "--disable-piecewise-cuda-graph", True)]
    table = settings_of({"0.5.13": OLD_FLAGS, "0.5.14": NEW_FLAGS + rows, "0.5.20": NEW_FLAGS})
    assert table["settings"] == [
        {"--cuda-graph-backend-decode=disabled --cuda-graph-backend-prefill=disabled": [["0.5.14", "0.5.20"]],
         "--disable-cuda-graph": [["0.5.13", "0.5.13"]]},
        {"--cuda-graph-backend-prefill=disabled": [["0.5.14", "0.5.20"]],  # outlives the alias
         "--disable-piecewise-cuda-graph": [["0.5.13", "0.5.13"]]}]


def test_a_flag_defined_twice_in_a_release_is_one_name_there():
    twice = [("--x", "x", True), ("--x", "x", True), ("--y", "x", True)]
    assert settings_of({"1": [("--x", "x", True)], "2": twice})["settings"] == [
        {"--x": [["1", "2"]], "--y": [["2", "2"]]}]


def test_braces_expand_as_a_shell_does():
    assert expand_braces("--x-{a,b}=v") == "--x-a=v --x-b=v"
    assert expand_braces("--plain") == "--plain"
