"""``nfd compat``: image compatibility (upstream's ``nfd compat validate-node``, plus ``attach``).

    nfd compat validate-node (--image REF | --spec-file FILE) [--tags t1,t2] [--platform os[/arch[/variant]][:osver]]
                             [--plain-http] [--output-json] [--registry-username USER]
                             [--registry-password-stdin | --registry-token-stdin] [--host-root DIR]
    nfd compat attach --image REF --spec FILE [--platform ...] [--plain-http] [auth flags]
                      [--skip-validation]

Exit status (docs/image-compatibility.md): 0 the node was evaluated (whether it is compatible
or not, as upstream), 1 a usage or other error, 3 image or platform not found, 4 no
compatibility artifact, 5 malformed artifact, 6 authentication refused, 7 registry unreachable.
Upstream exits 1 for all of them.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any, NoReturn

from nfd.common.fileargs import FileArgError, read_bytes_arg
from nfd.compat import oci
from nfd.compat.oci import OciError
from nfd.compat.spec import SpecError, parse_spec
from nfd.compat.validator import to_json_text, validate
from nfd.hostpaths import HostPaths
from nfd.sources import registry
from nfd.sources.base import DiscoveryContext
from nfd.sources.discovery import discover, parse_source_configs

EXIT_ERROR = 1
EXIT_MALFORMED = 5

_BOOL_FLAGS = ("--plain-http", "--output-json", "--registry-password-stdin", "--registry-token-stdin",
               "--skip-validation")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        head = "the following arguments are required: "
        if message.startswith(head):  # cobra's wording
            longs = [o.split("/")[-1].lstrip("-") for o in message[len(head):].split(", ")]
            message = "required flag(s) " + ", ".join(f'"{x}"' for x in longs) + " not set"
        sys.stderr.write(f"Error: {message}\n")
        self.print_usage(sys.stderr)
        sys.exit(EXIT_ERROR)


def _pflag_bools(argv: list[str]) -> list[str]:
    """pflag's ``--flag=true|false`` for boolean flags (argparse only knows ``--flag``)."""
    out = []
    for a in argv:
        name, eq, val = a.partition("=")
        if eq and name in _BOOL_FLAGS:
            v = val.lower()
            if v in ("1", "t", "true"):
                out.append(name)
            elif v not in ("0", "f", "false"):
                raise UsageError(f'invalid argument "{val}" for "{name}" flag: strconv.ParseBool: parsing '
                                 f'"{val}": invalid syntax')
        else:
            out.append(a)
    return out


def _add_registry_flags(p: argparse.ArgumentParser, *, image_required: bool = True) -> None:
    p.add_argument("--image", required=image_required, default="",
                   help="the URL of the image containing compatibility metadata")
    p.add_argument("--platform", default="", help="the artifact platform in the format os[/arch][/variant][:os_version]")
    p.add_argument("--plain-http", action="store_true", help="use of HTTP protocol for all registry communications")
    p.add_argument("--registry-username", default="", help="registry username")
    p.add_argument("--registry-password-stdin", action="store_true", help="read registry password from stdin")
    p.add_argument("--registry-token-stdin", action="store_true", help="read registry access token from stdin")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="nfd compat", description="Image compatibility commands")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    v = sub.add_parser("validate-node",
                       help="Perform node validation based on its associated image compatibility artifact",
                       description="Perform node validation based on its associated image compatibility artifact",
                       epilog="example:\n  nfd compat validate-node --image <image-url>",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_registry_flags(v, image_required=False)
    v.add_argument("--spec-file", default="",
                   help="check this local compatibility spec file (YAML, - for stdin) instead of an image's "
                        "artifact; no registry is contacted")
    v.add_argument("--tags", action="append", default=[],
                   help="a list of tags that must match the tags set on the compatibility objects")
    v.add_argument("--output-json", action="store_true", help="print a JSON object")
    v.add_argument("--host-root", default=None, help="read the host from DIR instead of / (fixtures, a mounted host)")
    a = sub.add_parser("attach", help="attach an image compatibility spec to an image (as `oras attach`)",
                       description="Attach an image compatibility spec to an image as an OCI artifact")
    _add_registry_flags(a)
    a.add_argument("--spec", required=True, help="the compatibility spec file (YAML), - for stdin")
    a.add_argument("--skip-validation", action="store_true", help="attach the file even if it is not a valid spec")
    return p


def _read_stdin() -> str:
    secret = sys.stdin.read()
    return secret.removesuffix("\n").removesuffix("\r")


def _client(args: argparse.Namespace) -> tuple[Any, Any]:
    try:
        platform = oci.parse_platform(args.platform)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.registry_token_stdin and args.registry_password_stdin:
        raise UsageError("cannot use --registry-token-stdin and --registry-password-stdin at the same time")
    password = token = ""
    if args.registry_token_stdin:
        token = _read_stdin()
    elif args.registry_password_stdin:
        password = _read_stdin()
    ref = oci.parse_reference(args.image)
    creds = oci.Credentials(username=args.registry_username, password=password, token=token)
    if creds.username and not creds.password and not creds.token:
        raise UsageError("--registry-username needs the password on stdin (--registry-password-stdin)")
    return oci.Client(ref, plain_http=args.plain_http, creds=creds), platform


def _discover(host_root: str | None) -> Any:
    if host_root and not os.path.isdir(host_root):
        raise UsageError(f"--host-root {host_root}: not a directory")
    ctx = DiscoveryContext(paths=HostPaths.detect(host_root),
                           node_name=os.environ.get("NODE_NAME") or os.uname().nodename)
    return discover(ctx, registry.resolve(["all"], kind="feature"), parse_source_configs(None)).merged()


def cmd_validate_node(args: argparse.Namespace) -> int:
    if args.spec_file and args.image:
        raise UsageError("--spec-file and --image cannot be used together")
    if args.spec_file:
        try:
            blob = read_bytes_arg(args.spec_file, flag="--spec-file")
        except FileArgError as e:
            raise UsageError(str(e)) from None
        source, what = args.spec_file, "compatibility spec"
    elif args.image:
        client, platform = _client(args)
        blob, digest = client.fetch_spec(platform)
        source, what = f"compatibility artifact {digest} of {args.image}", "compatibility artifact"
    else:
        raise UsageError('required flag(s) "image" not set (or --spec-file)')
    try:
        spec = parse_spec(blob, source=source)
    except SpecError as e:
        print(f"Error: malformed {what}: {e}", file=sys.stderr)
        return EXIT_MALFORMED
    tags = [t for item in args.tags for t in item.split(",") if t]
    statuses = validate(spec, _discover(args.host_root), tags=tags)
    if args.output_json:
        sys.stdout.write(to_json_text(statuses))
    else:
        print_result(statuses, color=sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
    return 0


def cmd_attach(args: argparse.Namespace) -> int:
    try:
        data = read_bytes_arg(args.spec, flag="--spec")
    except FileArgError as e:
        raise UsageError(str(e)) from None
    if not args.skip_validation:
        try:
            parse_spec(data, source=args.spec)
        except SpecError as e:
            print(f"Error: {e}", file=sys.stderr)
            return EXIT_MALFORMED
    client, platform = _client(args)
    print(client.attach(data, platform=platform))
    return 0


# -- the table (upstream draws it with go-pretty's StyleLight) --------------------------------


def _paint(s: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{s}\x1b[0m" if color else s


def _table(title: str, header: list[str], groups: list[list[list[str]]]) -> str:
    rows = [r for g in groups for r in g]
    widths = [max(len(x) for x in col) for col in zip(header, *rows, strict=False)] if header else []
    inner = sum(widths) + 3 * len(widths) - 1
    if len(title) + 2 > inner:
        widths[-1] += len(title) + 2 - inner
        inner = len(title) + 2

    def line(left: str, mid: str, right: str) -> str:
        return left + mid.join("─" * (w + 2) for w in widths) + right

    def row(cells: list[str]) -> str:
        return "│" + "│".join(f" {c:<{w}} " for c, w in zip(cells, widths, strict=False)) + "│"

    out = ["┌" + "─" * inner + "┐", "│ " + title.ljust(inner - 2) + " │", line("├", "┬", "┤"), row(header)]
    for g in groups:
        if not g:
            continue
        out.append(line("├", "┼", "┤"))
        out.extend(row(r) for r in g)
    out.append(line("└", "┴", "┘"))
    return "\n".join(out)


def print_result(statuses: list[Any], *, color: bool = False) -> None:
    w = sys.stdout.write
    for i, cs in enumerate(statuses):
        head = _paint(f"COMPATIBILITY SET #{i + 1} ", "1;36", color)
        tail = f"Weight: {cs.weight}" + (f"; Tag: {cs.tag}" if cs.tag else "")
        w(head + _paint(tail, "36", color) + "\n")
        w(_paint(f"Description: {cs.description}", "37", color) + "\n")
        for r in cs.rules:
            verdict = " OK " if r.is_match else " FAIL "
            title = f"RULE: {r.name}".upper() + f" - {verdict}"
            groups: list[list[list[str]]] = []
            idx = 0
            for g in [r.matched_expressions, *r.matched_any]:
                rows = []
                for m in g:
                    idx += 1
                    feat = f"{m.feature}.{m.name}" if m.name else m.feature
                    rows.append([str(idx), feat, m.expression_string(), m.matcher_type,
                                 "OK" if m.is_match else "FAIL"])
                groups.append(rows)
            w(_table(title, ["", "Feature", "Expression", "Matcher Type", "Status"], groups) + "\n")
            if r.error:  # ours: upstream aborts the whole run instead
                w(f"Error in rule {r.name!r}: {r.error}\n")
        w("\n")


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.CRITICAL, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    raw = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(_pflag_bools(raw))
        if args.command is None:
            parser.print_help()
            return 0
        if args.command == "validate-node":
            return cmd_validate_node(args)
        return cmd_attach(args)
    except UsageError as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except OciError as e:
        print(f"Error: {e}", file=sys.stderr)
        return e.exit_code
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
