"""make lab: serve a lab in the foreground until SIGINT or SIGTERM.

Prints the collection's settings for it as NAME=value lines, and writes them to <state-dir>/env.
"""

import argparse
import signal
import sys
import threading

from .serving import Lab

BLOCK = '127.77.0'


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m lab', description=__doc__.splitlines()[0])
    parser.add_argument('--state-dir', default='.lab', help='where the lab keeps its files (default .lab)')
    parser.add_argument('--time-scale', type=float, default=1.0,
                        help='real seconds per PVE second; 0 ends tasks before their request returns (default 1)')
    args = parser.parse_args(argv)
    stopping = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.set())
    with Lab(args.state_dir, block=BLOCK, time_scale=args.time_scale) as lab:
        lines = ''.join('{0}={1}\n'.format(name, value) for name, value in lab.env.items())
        (lab.state_dir / 'env').write_text(lines)
        sys.stdout.write(lines)
        sys.stdout.flush()
        stopping.wait()
    return 0


if __name__ == '__main__':
    sys.exit(main())
