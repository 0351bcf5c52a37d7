"""A DNS server (UDP and TCP) authoritative for the lab zone: A records set per test.

Names in the zone without a record answer NXDOMAIN; names outside it REFUSED, as an authoritative-only
server does.
"""

import asyncio
import struct

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.rrset

PORT = 53
TTL = 60


class LabDns:
    """The zone's A records; lab.dns.set('web1', '127.10.1.11') answers web1.<domain>."""

    def __init__(self, address, domain='lab.test', port=PORT):
        self.address = address
        self.port = port
        self.domain = domain
        self.zone = dns.name.from_text(domain)
        self.records = {}
        # (name, type) of every query answered, oldest first.
        self.queries = []
        self._servers = []

    @property
    def server(self):
        """host:port, as PROXMOX_DNS_SERVERS takes it."""
        return f'{self.address}:{self.port}'

    def _name(self, name):
        """The absolute name of 'web1' or 'web1.lab.test' (with or without the final dot)."""
        text = name.rstrip('.')
        absolute = dns.name.from_text(text)
        return absolute if absolute.is_subdomain(self.zone) else dns.name.from_text(text, origin=self.zone)

    def set(self, name, *addresses):
        """Answer name (relative to the zone, or a name in it) with these IPv4 addresses."""
        self.records[self._name(name)] = tuple(addresses)

    def remove(self, name):
        self.records.pop(self._name(name), None)

    def answer(self, wire):
        """The response (wire format) to a query (wire format), or None for garbage."""
        try:
            query = dns.message.from_wire(wire)
        except dns.exception.DNSException:
            return None
        response = dns.message.make_response(query)
        response.flags &= ~dns.flags.RA
        if len(query.question) != 1:
            response.set_rcode(dns.rcode.FORMERR)
            return response.to_wire()
        question = query.question[0]
        self.queries.append((question.name.to_text(), dns.rdatatype.to_text(question.rdtype)))
        if not question.name.is_subdomain(self.zone):
            response.set_rcode(dns.rcode.REFUSED)
            return response.to_wire()
        response.flags |= dns.flags.AA
        addresses = self.records.get(question.name)
        if addresses is None and question.name != self.zone:
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif addresses and question.rdtype in (dns.rdatatype.A, dns.rdatatype.ANY):
            response.answer.append(dns.rrset.from_text_list(question.name, TTL, 'IN', 'A', list(addresses)))
        return response.to_wire()

    async def start(self):
        loop = asyncio.get_running_loop()
        transport, _protocol = await loop.create_datagram_endpoint(lambda: _Udp(self), local_addr=(self.address, self.port))
        self._servers.append(transport)
        self._servers.append(await asyncio.start_server(self._tcp, self.address, self.port))

    async def stop(self):
        for server in self._servers:
            server.close()
        self._servers = []

    async def _tcp(self, reader, writer):
        # RFC 1035 4.2.2: each message is preceded by its length in two bytes.
        try:
            while True:
                size = struct.unpack('>H', await reader.readexactly(2))[0]
                reply = self.answer(await reader.readexactly(size))
                if reply is None:
                    break
                writer.write(struct.pack('>H', len(reply)) + reply)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, server):
        self.server = server
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        reply = self.server.answer(data)
        if reply is not None:
            self.transport.sendto(reply, addr)
