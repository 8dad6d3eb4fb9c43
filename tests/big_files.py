"""Large input files made cheaply: gzip written piece by piece, so a cell of gigabytes costs a few MB to build.

Shared by the input-limit tests and ``benchmarks/hostile_inputs.py`` (which puts the repository on its path).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path


def write_gzip(path: Path, pieces: Sequence[tuple[bytes, int]]) -> Path:
    """Write ``pieces`` (bytes, times repeated) gzipped, never whole in this process; return ``path``."""
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    with path.open("wb") as handle:
        for data, times in pieces:
            for _ in range(times):
                handle.write(compressor.compress(data))
        handle.write(compressor.flush())
    return path
