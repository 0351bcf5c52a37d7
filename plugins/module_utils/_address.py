# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The address to reach a VM at: static (``ipconfig0``), from DNS, or reported by the guest agent under DHCP.

Decisions:
- DNS is asked only through the declared ``dns_servers`` (``host`` or ``host:port``, IP addresses), never
  the system resolver: a lab or a split-horizon zone must not be answered by whatever the controller uses.
  A server given by name is refused, since finding it would need the system resolver.
- NXDOMAIN, or a name without an A record, means "not in DNS", so the VM takes its address by DHCP. Any
  other failure (timeout, SERVFAIL, REFUSED) is an error: guessing DHCP during a DNS outage would
  reconfigure the network of every VM declared this way.
- Under DHCP the guest agent reports the address (``GET .../agent/network-get-interfaces``): the first
  IPv4 address of an interface other than the loopback one, link-local addresses skipped. The caller bounds
  the wait, and asks nothing when the VM's config does not enable the agent. No address is not an error:
  the VM is as declared, and the caller tells the user why its address is unknown.
"""

from __future__ import annotations

import ipaddress
import time
import traceback
from contextlib import contextmanager
from dataclasses import replace

from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._guest import guest_path
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError, parse_property_string

try:
    import dns.exception
    import dns.nameserver
    import dns.resolver
except ImportError:
    HAS_DNSPYTHON = False
    DNSPYTHON_IMPORT_ERROR: str | None = traceback.format_exc()
else:
    HAS_DNSPYTHON = True
    DNSPYTHON_IMPORT_ERROR = None

DNS_PORT = 53
# Seconds one lookup may take, over every server and retry.
DNS_LIFETIME = 10.0
AGENT_FIRST_POLL = 0.5
AGENT_MAX_POLL = 5.0


def parse_dns_servers(value):
    """(address, port) of each ``host`` / ``host:port`` entry (IPv6 as ``[addr]:port`` or bare); SpecError naming dns_servers."""
    servers = []
    for entry in value or ():
        text = str(entry).strip()
        host, port = text, DNS_PORT
        if text.startswith('['):
            host, _bracket, rest = text[1:].partition(']')
            port = rest[1:] if rest.startswith(':') else (rest or DNS_PORT)
        elif text.count(':') == 1:
            host, port = text.split(':')
        try:
            address = str(ipaddress.ip_address(host))
            port = int(port)
        except ValueError:
            raise SpecError(
                'dns_servers',
                f'entries must be IP addresses, optionally with :port (got {text!r}); '
                'a server given by name would have to be found through the system resolver, '
                'which pve_vm never asks',
            ) from None
        if not 0 < port < 65536:
            raise SpecError('dns_servers', f'entry {text!r} has a port outside 1-65535')
        servers.append((address, port))
    return tuple(servers)


def resolve_dns(fqdn, servers, lifetime=DNS_LIFETIME):
    """The first IPv4 address of ``fqdn`` from ``servers`` ((address, port) pairs), or None when the name has none."""
    if not servers:
        raise SpecError(
            'dns_servers',
            f'is empty, but dns_domain asks to look up {fqdn}: give the DNS servers to ask '
            '(dns_servers or PROXMOX_DNS_SERVERS, host or host:port), or declare ip',
        )
    if not HAS_DNSPYTHON:
        raise SpecError('dns_domain', f'needs the Python library dnspython on the controller to look up {fqdn}')
    resolver = dns.resolver.Resolver(configure=False)
    resolver.nameservers = [dns.nameserver.Do53Nameserver(address, port) for address, port in servers]
    resolver.lifetime = lifetime
    try:
        answer = resolver.resolve(fqdn.rstrip('.') + '.', 'A', search=False)
    except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
        return None
    except dns.exception.DNSException as exc:
        asked = ', '.join(f'{address}:{port}' for address, port in servers)
        raise SpecError(
            'dns_servers',
            f'gave no usable answer for {fqdn} ({asked}: {exc}); pve_vm does not guess the '
            'address (DHCP or static) while DNS fails: fix the DNS servers, or declare ip',
        ) from None
    return str(answer[0].address)


def static_address(ipconfig0):
    """The IPv4 address of an ``ipconfig0`` value (``ip=127.0.0.5/24,gw=...``), or None under DHCP or without one."""
    ip = parse_property_string(ipconfig0).get('ip', 'dhcp')
    return None if ip == 'dhcp' else str(ipaddress.ip_interface(ip).ip)


def _loopback_interface(interface):
    # By interface, not by address range: Linux calls it lo, Windows "Loopback Pseudo-Interface 1".
    name = str(interface.get('name') or '')
    return name == 'lo' or name.lower().startswith('loopback')


def _usable_ipv4(text):
    try:
        address = ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return not (address.is_link_local or address.is_unspecified)


def first_agent_ipv4(interfaces):
    """The first IPv4 address in the agent's network-get-interfaces answer outside the loopback interface, link-local skipped."""
    for interface in interfaces or ():
        if _loopback_interface(interface):
            continue
        for item in interface.get('ip-addresses') or ():
            if item.get('ip-address-type') == 'ipv4' and _usable_ipv4(item.get('ip-address')):
                return item['ip-address']
    return None


def agent_address(client, node, vmid, wait):
    """(address, None) as the VM's guest agent reports it, asking until ``wait`` seconds have passed; else (None, its last answer).

    The wait is the caller's bound (``agent_timeout``): the client's own retries of a failed request (a hung agent's
    ``got timeout`` is a 500 it would retry for minutes) are held to the time left, so the last request is the only one
    that may end after the wait, when PVE gives up on the agent (qemu-server's QMP timeout, seconds)."""
    path = guest_path(node, vmid, '/agent/network-get-interfaces')
    deadline = time.monotonic() + wait
    delay = AGENT_FIRST_POLL
    while True:
        try:
            with _retries_within(client, deadline - time.monotonic()):
                answer = client.get(path, context=f'asking the guest agent of VM {vmid} for its addresses')
        except PveApiError as exc:
            if exc.status == 403:
                # Asking again will not help. qemu-server's agent calls take VM.GuestAgent.Audit (pve-access-control
                # 9.0.2 and later); PVE 8 has no such privilege and takes VM.Monitor.
                return None, (
                    f'PVE refused: {(exc.reason or "").strip()}; grant VM.GuestAgent.Audit (PVE 9) or VM.Monitor (PVE 8) on /vms/{vmid} to read the guest agent'
                )
            last = f'PVE answered: {exc.reason}'
        else:
            address = first_agent_ipv4((answer or {}).get('result'))
            if address:
                return address, None
            last = 'the agent reported no IPv4 address'
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None, last
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, AGENT_MAX_POLL)


@contextmanager
def _retries_within(client, seconds):
    """The client retrying a call only while ``seconds`` last (none when the wait is over)."""
    policy = getattr(client, 'retry', None)
    if policy is None:
        yield
        return
    client.retry = replace(policy, budget=max(0.0, min(policy.budget, seconds)))
    try:
        yield
    finally:
        client.retry = policy
