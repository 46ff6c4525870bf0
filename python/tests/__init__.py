"""The package's unittest tests.

Run from python/ with `python3 -m unittest discover`: the checkout's src/ is
put on the path when it is there, so the tests need no install. CI runs them
against an installed copy instead (scripts/lib.sh test_python removes src/
from its copy first, so the import can only find the installed package)."""

import os
import sys

_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
if os.path.isdir(_SRC) and _SRC not in sys.path:
    sys.path.insert(0, _SRC)
