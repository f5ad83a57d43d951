"""logx's version (pyproject.toml says the same; tests/test_packaging.py keeps them equal). Its own
module so that the stages that print it import it from below, not the package's face."""

__version__ = "0.1.0"
