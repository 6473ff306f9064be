"""Run `python -m MODULE --help` and record its argparse options (stdlib only; run in the verify env).

    python cli_probe.py OUT.json MODULE [PRETEND.json]

The module runs exactly as `python -m MODULE --help` would (runpy, run_name="__main__"); the probe
only watches ArgumentParser.print_help to record each parser's actions (options, dest, choices)
before the help text is printed, which is more exact than parsing the wrapped text. PRETEND: a
pretend_cuda spec, installed first (the module then imports as on that GPU).
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys
import traceback


def _actions(parser: argparse.ArgumentParser) -> list[dict]:
    out = []
    for a in parser._actions:
        choices = None
        if a.choices is not None:
            try:
                choices = sorted({str(c) for c in a.choices})
            except TypeError:
                choices = None
        out.append({"options": list(a.option_strings), "dest": a.dest, "choices": choices,
                    "help_suppressed": a.help == argparse.SUPPRESS})
    return out


def main() -> None:
    out_path, module = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 3:
        import pretend_cuda

        pretend_cuda.install(json.loads(open(sys.argv[3]).read()))
    parsers: list[dict] = []
    original = argparse.ArgumentParser.print_help

    def print_help(self, file=None):
        parsers.append({"prog": self.prog, "actions": _actions(self)})
        return original(self, file)

    argparse.ArgumentParser.print_help = print_help
    sys.argv = [module, "--help"]
    result = {"module": module, "exit": None, "error": ""}
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        result["exit"] = 0
    except SystemExit as exc:
        result["exit"] = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        result["error"] = "\n".join("".join(lines).rstrip().splitlines()[-6:])
        result["exit"] = 1
    result["parsers"] = parsers
    with open(out_path, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
