"""Builds the optional C scan (``logforensics._scan``); everything else is in pyproject.toml.

``optional=True``: without a C compiler the install still succeeds and logx uses the same
scan written in Python (slower on large logs, identical results)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("logforensics._scan", ["logforensics/_scan.c"], optional=True)])
