"""``python -m seglog.cli``: the same as the ``seglog`` command."""

from __future__ import annotations

import sys

from seglog.cli.main import main

sys.exit(main())
