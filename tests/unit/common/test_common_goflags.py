from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from nfd.common.goduration import format_go_duration, parse_go_duration
from nfd.common.goflags import GoFlagSet, add_klog_flags, parse_bool


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0.0), ("-0", 0.0), ("60s", 60.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("500ms", 0.5),
     ("2us", 2e-6), ("2µs", 2e-6), ("2μs", 2e-6), ("-1m", -60.0), ("+.5s", 0.5), (" 3s ", 3.0), ("1h1s", 3601.0)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "s", "1d", "1h-5m", "--1s", "+", "1.s5", "1 s"])
def test_invalid_go_durations(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_go_duration(text)


@pytest.mark.parametrize(("ns", "text"), [(0, "0s"), (3600 * 10**9, "1h0m0s"), (60 * 10**9, "1m0s"),
                                          (5 * 10**9, "5s"), (1_500_000, "1.5ms"), (90 * 10**9, "1m30s")])
def test_go_duration_strings(ns: int, text: str) -> None:
    assert format_go_duration(ns) == text


def test_bools() -> None:
    assert [parse_bool(t) for t in ("1", "t", "TRUE", "0", "f", "False")] == [True, True, True, False, False, False]
    for bad in ("yes", "tRuE"):  # strconv.ParseBool's spellings only
        with pytest.raises(argparse.ArgumentTypeError):
            parse_bool(bad)


def _set() -> GoFlagSet:
    p = GoFlagSet("prog", description="does things")
    p.bool("oneshot", False, "Update once and exit")
    p.bool("fingerprint", True, "Compute it")
    p.int("port", 8080, "Port which metrics and healthz endpoints are served on")
    p.string("watch-namespace", "*", "Namespace to watch pods. Use * for all namespaces.")
    p.string("kubeconfig", "", "Kubeconfig to use")
    p.duration("sleep-interval", 60.0, "Time to sleep")
    p.float("qps", 50.0, "rate")
    p.value("owner-refs", "owner sources", parse=str, def_text="pod,ds")
    add_klog_flags(p, wrapped=False)
    return p


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["-oneshot", "-port=9", "--kubeconfig", "k", "-sleep-interval", "1m30s"],
         {"oneshot": True, "port": 9, "kubeconfig": "k", "sleep_interval": 90.0}),
        (["--oneshot=false", "-fingerprint=F", "-port", "0x10", "-qps=2.5"],
         {"oneshot": False, "fingerprint": False, "port": 16, "qps": 2.5}),
        (["-v", "4", "-logtostderr=false", "-stderrthreshold=WARNING"], {"v": 4, "logtostderr": False,
                                                                          "stderrthreshold": 1}),
        (["-oneshot", "--", "-port=1"], None),  # "--" ends the flags: -port=1 is an argument
        ([], {"oneshot": False, "port": 8080, "watch_namespace": "*", "sleep_interval": 60.0, "v": None}),
    ],
)
def test_go_flag_syntax(argv: list[str], want: dict[str, object] | None, capsys: pytest.CaptureFixture[str]) -> None:
    if want is None:
        with pytest.raises(SystemExit) as e:
            _set().parse(argv)
        assert e.value.code == 2
        assert capsys.readouterr().err.startswith("unknown command line argument: -port=1\nUsage of prog:\n")
        return
    ns = _set().parse(argv)
    assert {k: getattr(ns, k) for k in want} == want
    assert ns.given == {a.lstrip("-").split("=")[0] for a in argv if a.startswith("-")}


@pytest.mark.parametrize(
    ("argv", "first_line"),
    [
        (["-foo"], "flag provided but not defined: -foo"),
        (["--foo=1"], "flag provided but not defined: -foo"),
        (["-port", "x"], 'invalid value "x" for flag -port: parse error'),
        (["-port=99999999999999999999"], 'invalid value "99999999999999999999" for flag -port: value out of range'),
        (["-sleep-interval=5"], 'invalid value "5" for flag -sleep-interval: parse error'),
        (["-oneshot=yes"], 'invalid boolean value "yes" for -oneshot: parse error'),
        (["-port"], "flag needs an argument: -port"),
        (["-oneshot", "false"], "unknown command line argument: false"),  # a bool takes no separate value
        (["---x"], "bad flag syntax: ---x"),
        (["-v=x"], 'invalid value "x" for flag -v: strconv.ParseInt: parsing "x": invalid syntax'),
    ],
)
def test_go_flag_errors(argv: list[str], first_line: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        _set().parse(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[:2] == [first_line, "Usage of prog:"]  # no description on errors, as Go


def test_help_is_go_print_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        _set().parse(["-h"])
    assert e.value.code == 0
    err = capsys.readouterr().err
    assert err.startswith("prog: does things\nUsage of prog:\n  -add_dir_header\n    \tIf true, adds the file")
    for block in (
        "  -fingerprint\n    \tCompute it (default true)\n",
        "  -oneshot\n    \tUpdate once and exit\n",  # a zero default is not shown
        "  -port int\n    \tPort which metrics and healthz endpoints are served on (default 8080)\n",
        '  -watch-namespace string\n    \tNamespace to watch pods. Use * for all namespaces. (default "*")\n',
        "  -kubeconfig string\n    \tKubeconfig to use\n",
        "  -sleep-interval duration\n    \tTime to sleep (default 1m0s)\n",
        "  -qps float\n    \trate (default 50)\n",
        "  -owner-refs value\n    \towner sources (default pod,ds)\n",
        "  -logtostderr\n    \tlog to standard error instead of files (default true)\n",
        "  -log_file_max_size uint\n",
        "  -v value\n    \tnumber for the log level verbosity\n",
    ):
        assert block in err, block


def test_klog_flags_wrapped_as_worker_and_master_show_every_default() -> None:
    p = GoFlagSet("w")
    add_klog_flags(p, wrapped=True)
    text = p.usage()
    assert "  -v value\n    \tnumber for the log level verbosity (default 0)\n" in text
    assert "  -skip_headers\n    \tIf true, avoid header prefixes in the log messages (default false)\n" in text
    assert "  -log_dir value\n" in text


@pytest.mark.parametrize("module", ["nfd.worker", "nfd.master", "nfd.gc", "nfd.topology_updater"])
def test_daemons_share_one_format(module: str) -> None:
    """-version=true works, -h describes the program and lists defaults, an unknown flag is
    Go's line + usage with exit 2, for all four daemons."""
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=60)

    v = run("-version=true")
    assert v.returncode == 0 and v.stdout.startswith("nfd-"), (v.stdout, v.stderr)
    prog = v.stdout.split()[0]
    h = run("-h")
    assert h.returncode == 0
    lines = h.stderr.splitlines()
    assert lines[0].startswith(f"{prog}: ") and len(lines[0]) > 40 and lines[1] == f"Usage of {prog}:"
    assert "  -port int\n    \tPort " in h.stderr and "(default 8080)" in h.stderr
    bad = run("-foo")
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[:2] == ["flag provided but not defined: -foo", f"Usage of {prog}:"]


@pytest.mark.parametrize(
    ("value", "err"),
    [("Nope=true", "unrecognized feature gate: Nope"), ("DisableAutoPrefix", "missing bool value for DisableAutoPrefix"),
     ("DisableAutoPrefix=x", 'invalid value of DisableAutoPrefix=x, err: strconv.ParseBool: parsing "x": invalid syntax'),
     ("NodeFeatureAPI=false", "cannot set feature gate NodeFeatureAPI to false, feature is locked to true")],
)
def test_feature_gates_refused_as_upstream(value: str, err: str, capsys: pytest.CaptureFixture[str]) -> None:
    from nfd.worker.flags import parse_flags

    with pytest.raises(SystemExit) as e:
        parse_flags([f"-feature-gates={value}"])
    assert e.value.code == 2
    assert capsys.readouterr().err.splitlines()[0] == f'invalid value "{value}" for flag -feature-gates: {err}'
