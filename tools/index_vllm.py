#!/usr/bin/env python3
"""Build logx's index of vLLM's failure sites (``logforensics/data/vllm_sites.idx``).

The sibling of ``tools/index_sglang.py`` (same walk, same data layout, read by
``logforensics/_sites.py`` through the vllm dialect's ``Dialect.sites``): every ``raise``,
``assert``, ``parser.error`` and failure-announcing log call under ``vllm/`` in the last
release of each minor series from 0.6 on (``pip download vllm==X --no-deps``, cached under
``.cache/vllm-wheels/``, which git ignores; a wheel is 200-500 MB), with the release ranges in
which exactly that template exists. A site's flags are the ``EngineArgs`` fields it reads
(``self.max_model_len`` in a config class, ``args.max_num_seqs``), named as that release's
``--kebab-case`` flag. vLLM's benchmarks, vendored third-party code and tests are left out:
they are not the server.

Usage (re-run it when vLLM releases; see docs/vllm.md, "The release index")::

    python tools/index_vllm.py                  # the last release of every minor series >= 0.6
    python tools/index_vllm.py --versions 0.13.0 0.34.0 --cache DIR --out FILE
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import zipfile
from pathlib import Path

from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
import index_sglang as walk  # noqa: E402  (the AST walk shared with SGLang's index)

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "vllm-wheels"
OUT = ROOT / "logforensics" / "data" / "vllm_sites.idx"
FIRST = Version("0.6.0")
PACKAGE = "vllm"
# not the server: benchmark scripts, vendored code (flash-attn's Python, third_party/), tests
SKIPPED = re.compile(r"^vllm/(?:benchmarks|third_party|vllm_flash_attn|_vendor)/")
ARG_FILES = ("vllm/engine/arg_utils.py",)  # where EngineArgs (one field per flag) is defined
# ``self.X`` in a config class, ``args.X`` / ``engine_args.X`` / ``<name>_config.X`` anywhere
READS = re.compile(r"\b(?:self|args|engine_args|vllm_config|[a-z_]+_config)\.([a-z_][a-z0-9_]*)\b")


def last_of_each_minor(versions: list[str]) -> list[str]:
    """The newest release of every (major, minor) series, pre-releases left out."""
    newest: dict[tuple[int, int], Version] = {}
    for text in versions:
        v = Version(text)
        if v.is_prerelease or v < FIRST:
            continue
        key = (v.major, v.minor)
        if key not in newest or v > newest[key]:
            newest[key] = v
    return [str(v) for _, v in sorted(newest.items())]


def engine_fields(wheel: zipfile.ZipFile) -> frozenset[str]:
    """The ``EngineArgs`` dataclass fields of a release: each is a ``--kebab-case`` flag."""
    fields: set[str] = set()
    for name in ARG_FILES:
        try:
            tree = ast.parse(wheel.read(name))
        except (KeyError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in ("EngineArgs", "AsyncEngineArgs"):
                fields |= {s.target.id for s in node.body
                           if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    return frozenset(fields)


class VllmSiteFinder(walk.SiteFinder):
    """SGLang's walk with vLLM's notion of an argument: an ``EngineArgs`` field the site reads."""

    def __init__(self, file: str, fields: frozenset[str]):
        super().__init__(file)
        self.fields = fields

    def arg_fields(self, text: str, code: str) -> set[str]:
        return {name for name in READS.findall(f"{text} {code}") if name in self.fields}


def sites_of_wheel(path: Path, parsed: dict) -> list[dict]:
    """One vLLM wheel's sites. ``parsed`` is keyed by (file, content hash) as in SGLang's walk:
    an unchanged module keeps the flags of the first release that had it (fields come and go
    far more slowly than modules change)."""
    with zipfile.ZipFile(path) as wheel:
        fields = engine_fields(wheel)

    def finder(name: str, _wheel: zipfile.ZipFile) -> walk.SiteFinder:
        return VllmSiteFinder(name, fields)

    return walk.sites_of_wheel(path, parsed, PACKAGE, finder,
                               skip=lambda name: walk.is_test(name) or bool(SKIPPED.match(name)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", nargs="*",
                    help="releases to index (default: the last of every minor series >= 0.6)")
    ap.add_argument("--cache", type=Path, default=CACHE, help="where wheels are kept")
    ap.add_argument("--out", type=Path, default=OUT)
    ns = ap.parse_args(argv)
    versions = sorted(ns.versions or last_of_each_minor(walk.versions_on_registry(PACKAGE, FIRST)), key=Version)
    walk.write(walk.build(versions, ns.cache, PACKAGE, sites_of_wheel), ns.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
