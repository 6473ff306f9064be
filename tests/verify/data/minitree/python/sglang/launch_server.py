"""python -m sglang.launch_server"""

import argparse

from sglang.srt.server_args import add_cli_args


def main(argv=None):
    parser = argparse.ArgumentParser(prog="launch_server")
    add_cli_args(parser)
    return parser.parse_args(argv)


if __name__ == "__main__":
    main()
