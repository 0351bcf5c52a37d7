"""make lab: serve a lab in the foreground until SIGINT or SIGTERM.

Prints the collection's settings for it as NAME=value lines, and writes them to <state-dir>/env.
On SIGUSR1 it writes the SSH connections its guests accepted so far to <state-dir>/ssh-connections.
"""

import argparse
import ipaddress
import signal
import sys
import threading

from .serving import Lab

BLOCK = '127.77.0'


def dns_record(text):
    name, _sep, address = text.partition('=')
    try:
        address = str(ipaddress.IPv4Address(address))
    except ValueError:
        address = None
    if not (name and address):
        raise argparse.ArgumentTypeError(f'expected NAME=IPV4-ADDRESS, got {text!r}')
    return name, address


def write_ssh_connections(lab):
    """'<vmid> <count>' per guest and 'total <count>', renamed into place so a reader never sees half a file."""
    counts = lab.call(lambda: sorted((vmid, guest.connections) for vmid, guest in lab.guests.guests.items()))
    lines = [f'{vmid} {count}\n' for vmid, count in counts]
    lines.append(f'total {lab.ssh_connections()}\n')
    partial = lab.state_dir / 'ssh-connections.partial'
    partial.write_text(''.join(lines))
    partial.replace(lab.state_dir / 'ssh-connections')


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m lab', description=__doc__.splitlines()[0])
    parser.add_argument('--state-dir', default='.lab', help='where the lab keeps its files (default .lab)')
    parser.add_argument('--time-scale', type=float, default=1.0, help='real seconds per PVE second; 0 ends tasks before their request returns (default 1)')
    parser.add_argument(
        '--dns',
        type=dns_record,
        action='append',
        default=[],
        metavar='NAME=ADDRESS',
        help="an A record in the lab's DNS zone (NAME relative to the zone, e.g. web2); repeatable",
    )
    args = parser.parse_args(argv)
    stopping = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.set())
    with Lab(args.state_dir, block=BLOCK, time_scale=args.time_scale) as lab:
        for name, address in args.dns:
            lab.dns.set(name, address)
        signal.signal(signal.SIGUSR1, lambda *_: write_ssh_connections(lab))
        lines = ''.join(f'{name}={value}\n' for name, value in lab.env.items())
        (lab.state_dir / 'env').write_text(lines)
        sys.stdout.write(lines)
        sys.stdout.flush()
        stopping.wait()
    return 0


if __name__ == '__main__':
    sys.exit(main())
