# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The address to reach a VM at: DNS through the declared servers only (real queries to a local server), the
static address of ipconfig0, and the guest agent's report under DHCP."""

from __future__ import annotations

import socket
import threading

import pytest
from lab.dns import LabDns

from ansible_collections.puls.proxmox.plugins.module_utils import _address
from ansible_collections.puls.proxmox.plugins.module_utils._address import (
    agent_address,
    first_agent_ipv4,
    parse_dns_servers,
    resolve_dns,
    static_address,
)
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError


class UdpDns:
    """A DNS server on 127.0.0.1 (a free UDP port) answering from a LabDns zone, or not at all (silent=True)."""

    def __init__(self, silent=False):
        self.zone = LabDns('127.0.0.1', 'lab.test')
        self.silent = silent
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(('127.0.0.1', 0))
        self.port = self.socket.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                data, peer = self.socket.recvfrom(4096)
            except OSError:
                return
            reply = None if self.silent else self.zone.answer(data)
            if reply is not None:
                self.socket.sendto(reply, peer)

    def close(self):
        self.socket.close()


@pytest.fixture
def dns_server():
    server = UdpDns()
    yield server
    server.close()


# The declared servers.


def test_servers_are_ip_addresses_with_optional_ports():
    assert parse_dns_servers(['127.0.0.53', '127.0.0.2:5353', '[::1]:53', '2001:db8::53']) == (
        ('127.0.0.53', 53),
        ('127.0.0.2', 5353),
        ('::1', 53),
        ('2001:db8::53', 53),
    )
    assert parse_dns_servers(None) == ()


@pytest.mark.parametrize('entry', ['dns.example.com', 'dns.example.com:53', '127.0.0.1:http', '127.0.0.1:0', '[::1]:99999'])
def test_a_server_by_name_or_with_a_bad_port_is_refused_naming_the_option(entry):
    with pytest.raises(SpecError) as raised:
        parse_dns_servers([entry])
    assert raised.value.option == 'dns_servers' and entry in str(raised.value)


# DNS lookups.


def test_a_name_with_an_a_record_resolves_to_its_address(dns_server):
    dns_server.zone.set('web1', '127.10.0.11')
    assert resolve_dns('web1.lab.test', [('127.0.0.1', dns_server.port)]) == '127.10.0.11'
    assert dns_server.zone.queries == [('web1.lab.test.', 'A')]


def test_a_name_that_does_not_exist_means_dhcp(dns_server):
    assert resolve_dns('web2.lab.test', [('127.0.0.1', dns_server.port)]) is None


def test_a_refusing_server_is_an_error_not_dhcp(dns_server):
    # The lab's server is authoritative for lab.test only and refuses other names.
    with pytest.raises(SpecError) as raised:
        resolve_dns('web1.example.com', [('127.0.0.1', dns_server.port)])
    assert raised.value.option == 'dns_servers' and 'web1.example.com' in str(raised.value)
    assert 'does not guess' in str(raised.value)


def test_a_silent_server_is_an_error_within_the_lifetime():
    server = UdpDns(silent=True)
    try:
        with pytest.raises(SpecError, match=r'^dns_servers gave no usable answer for web1.lab.test \(127.0.0.1:\d+'):
            resolve_dns('web1.lab.test', [('127.0.0.1', server.port)], lifetime=0.5)
    finally:
        server.close()


def test_no_servers_with_a_domain_is_an_error_never_the_system_resolver():
    with pytest.raises(SpecError, match=r'^dns_servers is empty, but dns_domain asks to look up web1.lab.test'):
        resolve_dns('web1.lab.test', [])


# ipconfig0.


def test_static_address_of_ipconfig0():
    assert static_address('ip=127.0.0.5/24,gw=127.0.0.1') == '127.0.0.5'
    assert static_address('ip=dhcp') is None
    assert static_address(None) is None
    assert static_address('ip6=auto') is None


# The guest agent.

LO = {'name': 'lo', 'hardware-address': '00:00:00:00:00:00', 'ip-addresses': [{'ip-address': '127.0.0.1', 'ip-address-type': 'ipv4', 'prefix': 8}]}


def nic(name, *addresses):
    return {'name': name, 'ip-addresses': [{'ip-address': address, 'ip-address-type': 'ipv6' if ':' in address else 'ipv4'} for address in addresses]}


def test_first_ipv4_outside_the_loopback_interface_is_chosen():
    interfaces = [LO, nic('eth0', 'fe80::1', '169.254.3.4', '127.0.0.7', '127.0.0.8'), nic('eth1', '127.1.0.7')]
    assert first_agent_ipv4(interfaces) == '127.0.0.7'


def test_loopback_interfaces_are_skipped_by_name_not_by_address_range():
    # A guest whose network is in 127.0.0.0/8 (as in the lab) is still reachable there.
    assert first_agent_ipv4([LO, nic('Loopback Pseudo-Interface 1', '127.0.0.1'), nic('ens18', '127.10.0.100')]) == '127.10.0.100'
    assert first_agent_ipv4([LO, nic('eth0', 'fe80::1')]) is None


class AgentClient:
    """Answers the agent's network-get-interfaces from a script: a list of results or PveApiErrors, the last repeating."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.asked = []

    def get(self, path, context=None):
        self.asked.append(path)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return {'result': answer}


@pytest.fixture
def no_sleep(monkeypatch):
    monkeypatch.setattr(_address.time, 'sleep', lambda seconds: None)


def test_agent_is_asked_until_it_reports_an_address(no_sleep):
    client = AgentClient(PveApiError('x', reason='QEMU guest agent is not running'), [LO], [LO, nic('eth0', '127.0.0.9')])
    assert agent_address(client, 'pve1', 101, wait=60) == ('127.0.0.9', None)
    assert client.asked == ['/nodes/pve1/qemu/101/agent/network-get-interfaces'] * 3


def test_silent_agent_gives_its_last_answer_once_the_wait_is_over():
    client = AgentClient(PveApiError('x', reason='QEMU guest agent is not running'))
    assert agent_address(client, 'pve1', 101, wait=0) == (None, 'PVE answered: QEMU guest agent is not running')
    assert len(client.asked) == 1
