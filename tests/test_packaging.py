"""The wheel holds the whole package: ``pip install .`` (the README's first command) must not
lose a subpackage that the editable install of the tests finds in the source tree."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_subpackage_is_in_the_wheel():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    on_disk = {".".join(init.parent.relative_to(ROOT).parts)
               for init in (ROOT / "logforensics").rglob("__init__.py")}
    assert on_disk - listed == set()
    assert "logforensics.patterns" in listed and config["package-dir"]["logforensics.patterns"] == "patterns"


def test_package_data_covers_every_data_file():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = config["package-data"]["logforensics"]
    data = [p.relative_to(ROOT / "logforensics") for p in (ROOT / "logforensics" / "data").iterdir()
            if not p.name.startswith((".", "__"))]
    assert data
    assert [str(p) for p in data if not any(p.match(g) for g in globs)] == []


def test_type_information_ships_in_the_wheel():
    """``py.typed`` and the C scan's stub (``_scan.pyi``): without them a user's mypy sees no types."""
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["logforensics"]
    typed = [p.relative_to(ROOT / "logforensics") for p in (ROOT / "logforensics").glob("*.pyi")]
    typed.append(Path("py.typed"))
    assert Path("_scan.pyi") in typed
    assert [str(p) for p in typed if not any(p.match(g) for g in globs)] == []


def test_the_version_logx_prints_is_the_packages():
    from logforensics import __version__

    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"] == __version__
