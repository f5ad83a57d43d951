#!/usr/bin/env python3
"""Build logx's table of SGLang's flag spellings per release (``logforensics/data/sglang_flags.json.gz``).

A fix names flags; SGLang renames them (``--mamba-scheduler-strategy`` became
``--mamba-radix-cache-strategy`` in 0.5.14, the old spelling went in 0.5.20). This script reads
every release's argument definitions from the same wheels as ``tools/index_sglang.py``
(``parser.add_argument("--x", dest=…)`` calls, and since the dataclass-driven parser the
``Arg(cli_name=…, aliases=[…])`` of ``sglang/srt/arg_groups/fields``) and links each spelling to
the ServerArgs field it sets. Spellings that ever set one field (an alias of the new name, the
field renamed with it) are one *setting*; the table gives each setting's spellings with the
releases in which each was the setting's own name (an alias that only warns is not).

    python tools/index_sglang_flags.py                 # every release >= 0.4.6 (wheels cached)
    python tools/index_sglang_flags.py --versions 0.5.13 0.5.14 --out FILE

Only settings whose name changed are stored: the rest need no translation.
"""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_sglang import release_data_args, wheel_for, write_data  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "logforensics" / "data" / "sglang_flags.json.gz"
ARG_FILES = ("sglang/srt/server_args.py", "sglang/srt/arg_groups/")
# actions that keep an old spelling working while they warn: an alias, never the name
DEPRECATED_ACTIONS = ("Deprecated",)


def _const_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _strings(node: ast.AST | None) -> list[str]:
    if isinstance(node, ast.List | ast.Tuple):
        return [s for s in (_const_str(e) for e in node.elts) if s]
    one = _const_str(node)
    return [one] if one else []


def _kw(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _dest_of(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def spellings_of_source(source: str) -> list[tuple[str, str, bool]]:
    """``(flag, field, own_name)`` for each long flag a module defines: ``own_name`` False for
    a deprecated alias (its action warns and points at another spelling)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out: list[tuple[str, str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            flags = [a for a in (_const_str(x) for x in node.args) if a and a.startswith("--")]
            if not flags:
                continue
            dest = _const_str(_kw(node, "dest")) or _dest_of(flags[0])
            action = _kw(node, "action")
            action_name = ast.unparse(action) if action is not None else ""
            own = not any(word in action_name for word in DEPRECATED_ACTIONS)
            out += [(flag, dest, own) for flag in flags]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out += _field_spellings(node.target.id, node.annotation)
    return out


def _field_spellings(field: str, annotation: ast.AST) -> list[tuple[str, str, bool]]:
    """A dataclass field the parser is derived from (``A[T, "help"]`` or ``A[T, Arg(...)]``,
    ``A`` being ``Annotated``): ``--field-name`` or its ``cli_name``, and its aliases. A
    field without that metadata, or ``Arg(no_cli=True)``, has no flag."""
    if not (isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name)
            and annotation.value.id in ("A", "Annotated") and isinstance(annotation.slice, ast.Tuple)):
        return []
    meta = annotation.slice.elts[1:]
    arg = next((m for m in meta if isinstance(m, ast.Call) and isinstance(m.func, ast.Name)
                and m.func.id == "Arg"), None)
    if arg is None:
        return [("--" + field.replace("_", "-"), field, True)] if any(_const_str(m) for m in meta) else []
    no_cli = _kw(arg, "no_cli")
    if isinstance(no_cli, ast.Constant) and no_cli.value is True:
        return []
    name = _const_str(_kw(arg, "cli_name")) or "--" + field.replace("_", "-")
    own = not any(word in ast.unparse(_kw(arg, "action") or ast.Constant("")) for word in DEPRECATED_ACTIONS)
    return [(name, field, own)] + [(alias, field, own) for alias in _strings(_kw(arg, "aliases"))
                                   if alias.startswith("--")]


def spellings_of_wheel(path: Path) -> list[tuple[str, str, bool]]:
    with zipfile.ZipFile(path) as z:
        return [s for name in z.namelist() if name.endswith(".py") and name.startswith(ARG_FILES)
                for s in spellings_of_source(z.read(name).decode("utf-8", "replace"))]


def build(versions: list[str], cache: Path) -> dict:
    """The renamed settings: ``{"releases": [...], "settings": [{flag: [[first, last], ...]}]}``
    (a spelling's ranges are the releases where it is the setting's own name)."""
    per_release = {v: spellings_of_wheel(wheel_for(v, cache)) for v in versions}
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for found in per_release.values():  # a flag and every field it ever set are one setting
        for flag, field, _own in found:
            parent[find("flag:" + flag)] = find("field:" + field)
    owned: dict[str, dict[str, list[int]]] = {}
    for i, v in enumerate(versions):
        for flag, _field, own in per_release[v]:
            if own:
                owned.setdefault(find("flag:" + flag), {}).setdefault(flag, []).append(i)
    settings = []
    for spellings in owned.values():
        if len(spellings) < 2:
            continue
        primary = {}
        for flag, idx in spellings.items():
            runs, start = [], idx[0]
            for a, b in zip(idx, idx[1:] + [None], strict=True):
                if b != a + 1:
                    runs.append([versions[start], versions[a]])
                    start = b
            primary[flag] = runs
        if any(r != next(iter(primary.values())) for r in primary.values()):  # not plain synonyms
            settings.append(dict(sorted(primary.items())))
    settings.sort(key=lambda s: sorted(s))
    return {"releases": versions, "settings": settings}


def main(argv: list[str] | None = None) -> int:
    versions, ns = release_data_args(__doc__.split("\n\n")[0], OUT, argv)
    data = build(versions, ns.cache)
    write_data(data, ns.out)
    print(f"{len(versions)} releases, {len(data['settings'])} renamed settings, "
          f"{ns.out.stat().st_size} bytes -> {ns.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
