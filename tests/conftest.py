import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `grader` is a folder of the repository, not an installed package
    sys.path.insert(0, str(ROOT))
