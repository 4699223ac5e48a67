"""The nfd-master flag check the worker's masterless mode shares: ``-instance``.

Kept outside ``nfd.master`` so a worker can check it at start (in every mode, as nfd-master
does) without importing the master, its pipeline or the rules engine's languages. ``-feature-gates``
is parsed by ``nfd.common.goflags.parse_feature_gates``.
"""

from __future__ import annotations

import re

INSTANCE_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
