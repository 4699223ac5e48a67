"""``local`` source: feature files in ``features.d`` (labels and rule-only features).

File format (upstream): ``key[=value]`` lines (value defaults to ``true``), ``#`` comments and
directives ``# +expiry-time=<RFC3339>`` (applies to following lines until the next one),
``# +no-label`` / ``# +no-feature`` (next key only). Dot-files and non-regular files are ignored,
files over 64 KiB are skipped, files are read in name order and later files override keys.
"""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING, Any

from nfd.api.features import Features
from nfd.sources.base import DiscoveryContext, FeatureSource
from nfd.sources.hostfs import decode_text, go_trim_space

if TYPE_CHECKING:
    from datetime import datetime

MAX_FILE_SIZE = 65536
DIRECTIVE_PREFIX = "# +"


class LocalSource(FeatureSource):
    name = "local"
    features = ("local.label", "local.feature")
    priority = 20
    prefix_labels = False

    def discover(self, ctx: DiscoveryContext, config: dict[str, Any]) -> Features:
        features, labels = read_features_dir(ctx, ctx.paths.features_d())
        f = Features()
        f.attributes["local.feature"] = features
        f.attributes["local.label"] = labels
        return f

    def labels(self, features: Features, config: dict[str, Any], ctx: DiscoveryContext) -> dict[str, str]:
        return dict(features.attributes.get("local.label", {}))


def read_features_dir(ctx: DiscoveryContext, directory: str) -> tuple[dict[str, str], dict[str, str]]:
    features: dict[str, str] = {}
    labels: dict[str, str] = {}
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return features, labels
    except OSError as e:
        raise OSError(f"{directory}: cannot list feature files: {e.strerror or e}") from e
    if not names:
        return features, labels
    # deferred: datetime is 1.1 ms of a one-shot worker's start-up; only where there are feature files
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    for name in names:
        if name.startswith("."):
            continue
        path = os.path.join(directory, name)
        text = _read_feature_file(ctx, path)
        if text is None:
            continue
        file_features, file_labels = parse_feature_file(ctx, text, path, now=now)
        features.update(file_features)
        labels.update(file_labels)
    return features, labels


def _read_feature_file(ctx: DiscoveryContext, path: str) -> str | None:
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > MAX_FILE_SIZE:
            ctx.warn(f"{path}: feature file skipped: {st.st_size} bytes > {MAX_FILE_SIZE} bytes")
            return None
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_SIZE + 1)
    except FileNotFoundError:
        return None  # removed between listing and reading
    except OSError as e:
        ctx.warn(f"{path}: cannot read feature file: {e.strerror or e}")
        return None
    if len(data) > MAX_FILE_SIZE:
        ctx.warn(f"{path}: feature file skipped: larger than {MAX_FILE_SIZE} bytes")
        return None
    return decode_text(ctx, path, data, binary="binary content, feature file skipped")


# What Go's time.Parse(time.RFC3339, v) accepts: its strict fast path or, failing that, the
# general layout parser (1-digit hour, "," before the fraction, zone offsets up to 24:60).
_RFC3339 = (
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:[.,]([0-9]+))?"
    r"(?:(Z)|([+-])([0-9]{2}):([0-9]{2}))"
)
_MDAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def parse_rfc3339(value: str) -> datetime:
    from datetime import UTC, datetime, timedelta  # deferred: 1.1 ms, as read_features_dir

    oldest = datetime.min.replace(tzinfo=UTC)
    v = go_trim_space(value)
    m = re.fullmatch(_RFC3339, v)
    if not m:
        raise ValueError(f"{v!r} is not an RFC 3339 time")
    year, month, day, hour, minute, sec = (int(g) for g in m.groups()[:6])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)  # year 0 is leap in Go
    mdays = _MDAYS[month] + (1 if month == 2 and leap else 0) if 1 <= month <= 12 else 0
    off_h, off_m = (int(m.group(10)), int(m.group(11))) if m.group(9) else (0, 0)
    if not (1 <= day <= mdays and hour <= 23 and minute <= 59 and sec <= 59 and off_h <= 24 and off_m <= 60):
        raise ValueError(f"{v!r}: field out of range")
    if year == 0:
        return oldest  # before datetime's range; only ever compared as "already expired"
    micro = int((m.group(7) or "0")[:6].ljust(6, "0"))
    offset = timedelta(hours=off_h, minutes=off_m) * (-1 if m.group(9) == "-" else 1)
    try:
        return datetime(year, month, day, hour, minute, sec, micro, tzinfo=UTC) - offset
    except OverflowError:
        return oldest if offset > timedelta(0) else datetime.max.replace(tzinfo=UTC)


def parse_feature_file(
    ctx: DiscoveryContext, text: str, path: str, *, now: datetime
) -> tuple[dict[str, str], dict[str, str]]:
    features: dict[str, str] = {}
    labels: dict[str, str] = {}
    expiry = now
    skip_label = skip_feature = False
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = go_trim_space(raw)
        if not line:
            continue
        if line.startswith("#"):
            if line.startswith(DIRECTIVE_PREFIX):
                key, sep, value = line[len(DIRECTIVE_PREFIX):].partition("=")
                if key == "expiry-time":
                    try:
                        if not sep:
                            raise ValueError("should be '# +expiry-time=value'")
                        expiry = parse_rfc3339(value)
                    except ValueError as e:
                        ctx.warn(f"{path}:{lineno}: invalid expiry-time directive: {e}")
                elif key == "no-label":
                    skip_label = True
                elif key == "no-feature":
                    skip_feature = True
                else:
                    ctx.warn(f"{path}:{lineno}: unknown feature file directive {key!r}")
            continue
        if expiry < now:
            continue
        # upstream keeps any key, even "" (``=value``): features carry it, the label is dropped
        # later as an invalid name
        key, sep, value = line.partition("=")
        value = value if sep else "true"
        if skip_feature:
            features.pop(key, None)
        else:
            features[key] = value
        if skip_label:
            labels.pop(key, None)
        else:
            labels[key] = value
        skip_label = skip_feature = False
    return features, labels


SOURCE = LocalSource()
