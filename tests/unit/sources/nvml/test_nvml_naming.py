import pytest

from nfd.api.validation import is_valid_label_value
from nfd.sources.nvml.naming import (
    arch_family,
    fix_label_value,
    label_key_error,
    mig_memory_gb,
    mig_profile_name,
    sanitise,
)

GIB = 1 << 30


@pytest.mark.parametrize(
    "raw, want",
    [
        ("NVIDIA H100 80GB HBM3", "NVIDIA-H100-80GB-HBM3"),
        ("NVIDIA TITAN X (Pascal)", "NVIDIA-TITAN-X-Pascal"),
        ("some [ / thing / ]else", "some-thing-else"),
        ("  Tesla  T4 ", "Tesla-T4"),
        ("a.b_c-d", "a.b_c-d"),
        ("Standard PC (Q35 + ICH9, 2009)", "Standard-PC-Q35-ICH9-2009"),
        ("", ""),
    ],
)
def test_sanitise_as_gfd(raw: str, want: str) -> None:
    assert sanitise(raw) == want


@pytest.mark.parametrize(
    "cc, family",
    [
        ((1, 3), "tesla"),
        ((2, 1), "fermi"),
        ((3, 7), "kepler"),
        ((5, 2), "maxwell"),
        ((6, 1), "pascal"),
        ((7, 0), "volta"),
        ((7, 2), "volta"),
        ((7, 5), "turing"),
        ((8, 0), "ampere"),
        ((8, 6), "ampere"),
        ((8, 9), "ada-lovelace"),
        ((9, 0), "hopper"),
        ((10, 0), "blackwell"),
        ((12, 0), "blackwell"),
        ((13, 0), "rubin"),
        ((4, 0), "undefined"),
        ((11, 0), "undefined"),
    ],
)
def test_arch_family(cc: tuple[int, int], family: str) -> None:
    assert arch_family(*cc) == family


def test_h200_3g_rounds_half_up_like_go() -> None:
    # 0.5 x 141 GiB = 70.5: Go's math.Round gives 71, Python's round() would give 70
    h200 = 150754820096
    assert mig_memory_gb(65536, h200) == 71
    assert mig_profile_name(2, 2, 65536, h200) == "3g.71gb"
    assert mig_profile_name(4, 4, 131072, h200) == "7g.141gb"
    assert mig_profile_name(0, 0, 16384, h200) == "1g.18gb"
    assert mig_profile_name(9, 0, 32768, h200) == "1g.35gb"


def test_a100_and_h100_profile_names() -> None:
    a100 = 40 * GIB
    assert mig_profile_name(0, 0, 4864, a100) == "1g.5gb"
    assert mig_profile_name(2, 2, 19968, a100) == "3g.20gb"
    assert mig_profile_name(4, 4, 40192, a100) == "7g.40gb"
    h100 = 85520809984
    assert mig_profile_name(0, 0, 9984, h100) == "1g.10gb"
    assert mig_profile_name(1, 1, 20096, h100) == "2g.20gb"


def test_profile_attribute_suffixes_and_compute_split() -> None:
    a100 = 40 * GIB
    assert mig_profile_name(7, 0, 4864, a100) == "1g.5gb.me"  # REV1: "+me" with + -> .
    assert mig_profile_name(15, 0, 4864, a100) == "1g.5gb.me.all"
    assert mig_profile_name(10, 0, 4864, a100) == "1g.5gb.gfx"
    assert mig_profile_name(13, 0, 4864, a100) == "1g.5gb-me"
    assert mig_profile_name(2, 0, 19968, a100) == "1c.3g.20gb"
    assert mig_profile_name(4, 8, 40192, a100) == "7g.40gb"  # 7_SLICE_NVL compute profile counts as 7


def test_unknown_profile_index_is_an_error() -> None:
    with pytest.raises(ValueError):
        mig_profile_name(17, 0, 1, GIB)
    with pytest.raises(ValueError):
        mig_profile_name(0, 42, 1, GIB)


def test_label_syntax() -> None:
    assert label_key_error("nvidia.com/gpu.product") is None
    assert label_key_error("nvidia.com/" + "x" * 64) is not None
    assert label_key_error("Nvidia.com/a") is not None
    assert label_key_error("nvidia.com/-a") is not None
    # a trailing newline: "$" in a re.match pattern let it through
    assert label_key_error("nvidia.com/gpu.product\n") is not None
    assert label_key_error("nvidia.com\n/gpu.product") is not None
    assert fix_label_value("") == ""
    assert fix_label_value("-1") is None
    assert fix_label_value("NVIDIA-H100\n") is None


def test_fix_label_value() -> None:
    assert fix_label_value("NVIDIA-H100") == "NVIDIA-H100"
    long = "NVIDIA-" + "X" * 55 + "-SHARED"
    fixed = fix_label_value(long)
    assert fixed is not None and len(fixed) <= 63 and is_valid_label_value(fixed)
    assert fix_label_value("a" * 62 + "-b") == "a" * 62  # cut at 63 leaves a trailing "-"
    assert fix_label_value("-1") is None  # VFIO's compute.major: left out, not turned into "1"
    assert fix_label_value("NVIDIA-(x)") is None
