"""Address layout: every lab owns one /24 block of 127.0.0.0/8, so labs run side by side.

127.<10 + xdist worker>.<per-process counter>.x, and in it:
  .1 PVE API (8006)   .2 DNS (53)   .3 served files (80)
  .11-.99 static addresses for tests (lab.address(n))   .100-.199 DHCP pool   .201-.210 the nodes (vmbr0)
  .254 gateway (nothing listens)
"""

import ipaddress
import itertools
import os
import re

API, DNS, FILES, GATEWAY = 1, 2, 3, 254
STATIC = range(11, 100)
DHCP = range(100, 200)
NODES = range(201, 211)
_counter = itertools.count(1)


def worker_index():
    """The pytest-xdist worker number (gw3 -> 3); 0 outside xdist."""
    found = re.fullmatch(r'gw(\d+)', os.environ.get('PYTEST_XDIST_WORKER', ''))
    return int(found.group(1)) if found else 0


def next_block():
    """A block no other lab of this process has used: '127.B.C'."""
    wraps, third = divmod(next(_counter), 250)
    # Past 250 labs a worker moves to another second octet, clear of the other workers' (up to 16).
    second = 10 + (worker_index() + 16 * wraps) % 240
    return f'127.{second}.{third + 1}'


class AddressBlock:
    """The addresses of one lab, from its prefix ('127.77.0')."""

    def __init__(self, prefix):
        network = ipaddress.ip_network(prefix + '.0/24')
        if not network.subnet_of(ipaddress.ip_network('127.0.0.0/8')):
            raise ValueError(f'the lab only uses loopback addresses, not {prefix}')
        self.prefix = prefix

    def host(self, n):
        return f'{self.prefix}.{n}'

    @property
    def api(self):
        return self.host(API)

    @property
    def dns(self):
        return self.host(DNS)

    @property
    def files(self):
        return self.host(FILES)

    @property
    def gateway(self):
        return self.host(GATEWAY)

    def static(self, n):
        """The n-th static address for tests to declare (n from 1)."""
        if n + 10 not in STATIC:
            raise ValueError(f'static addresses are numbered 1..{len(STATIC)}')
        return self.host(n + 10)

    def node(self, n):
        """The address of the n-th (from 1) node, on its vmbr0."""
        if n + 200 not in NODES:
            raise ValueError(f'nodes are numbered 1..{len(NODES)}')
        return self.host(n + 200)

    def dhcp_range(self):
        return tuple(self.host(n) for n in DHCP)


def is_loopback(address):
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False
