"""``python -m logforensics`` runs the ``logx`` command line."""

from .cli import main

main()
