"""The ``npu-inductor`` command.

Subcommands are entry points in the group ``npu_inductor.commands``, so each component
ships its own (``cache`` comes with npu-cache, ``bench`` with the benchmarks...). A command
object has ``help`` (one line), ``configure(parser)`` and ``run(args)``; ``run`` returns
``(exit_code, data, text)``: ``data`` is what ``--json`` prints, ``text`` the human report.
Every subcommand gets ``--json``. A command with ``needs_components = True`` runs after
``npu_inductor.enable()``; a component that fails to register exits 1, naming it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import metadata

GROUP = "npu_inductor.commands"


def _commands() -> dict[str, object]:
    found = {}
    for ep in sorted(metadata.entry_points(group=GROUP), key=lambda ep: ep.name):
        try:
            found[ep.name] = ep.load()
        except Exception as exc:  # a broken plugin must not hide the others, but is named
            print(
                f"npu-inductor: command {ep.name!r} ({ep.value}) failed to load: {exc}",
                file=sys.stderr,
            )
    return found


def build_parser(commands: dict[str, object]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npu-inductor", description="torch.compile backend for Ascend NPUs"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, cmd in commands.items():
        p = sub.add_parser(name, help=cmd.help, description=cmd.help)
        p.add_argument("--json", action="store_true", help="print machine-readable JSON")
        cmd.configure(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    commands = _commands()
    args = build_parser(commands).parse_args(argv)
    command = commands[args.command]
    if getattr(command, "needs_components", False):
        from .components import ComponentError, enable

        try:
            enable()
        except ComponentError as exc:
            print(f"npu-inductor {args.command}: {exc}", file=sys.stderr)
            return 1
    code, data, text = command.run(args)
    out = json.dumps(data, indent=2) if args.json else text
    try:
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `npu-inductor features | head`: the reader left; exit quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return code


if __name__ == "__main__":
    sys.exit(main())
