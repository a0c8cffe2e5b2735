"""PEP 517 backend: maturin's, plus PyPI's ``ziglang`` as a build requirement when the build links with
zig (``MATURIN_PEP517_ARGS`` contains ``--zig``, or names ``build_support/zig-cc`` as the extension's
linker, as tox.ini's ``.pkg`` env does for the manylinux2014 wheel). A plain ``pip install .`` builds
natively and needs no zig.

maturin 1.16 finds zig through ``python3 -m ziglang`` only for ziglang < 0.16.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from maturin import (  # the backend's other hooks, re-exported unchanged
    build_editable,
    build_sdist,
    build_wheel,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)
from maturin import get_requires_for_build_wheel as _maturin_requires

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

ZIG_REQUIREMENT = "ziglang<0.16"


def get_requires_for_build_wheel(config_settings: Mapping[str, Any] | None = None) -> list[str]:
    requires = list(_maturin_requires(config_settings))
    args = os.environ.get("MATURIN_PEP517_ARGS", "")
    # maturin's own `--zig`, or zig as the extension's linker (build_support/zig-cc, tox.ini).
    if "--zig" in args.split() or "zig-cc" in args:
        requires.append(ZIG_REQUIREMENT)
    return requires
