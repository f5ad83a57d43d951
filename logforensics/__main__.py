"""``python -m logforensics`` runs the ``logx`` command line."""

from ._cli import main

main()
