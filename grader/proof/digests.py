"""The one digest every part of the proof is made of."""
from __future__ import annotations

import hashlib
import json


def digest(value) -> str:
    """sha256 of a JSON-able value (bytes as their hex), in a canonical form."""
    if isinstance(value, bytes):
        return hashlib.sha256(value).hexdigest()
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
