"""The lab's DNS server answers real queries for its zone."""

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.resolver


def query(lab, name, rdtype='A', tcp=False):
    ask = dns.query.tcp if tcp else dns.query.udp
    return ask(dns.message.make_query(name, rdtype), lab.dns.address, port=lab.dns.port, timeout=5)


def test_a_record_set_by_a_test_is_answered_over_udp_and_tcp(lab):
    lab.dns.set('web1', lab.address(1))
    for tcp in (False, True):
        response = query(lab, 'web1.lab.test', tcp=tcp)
        assert response.rcode() == dns.rcode.NOERROR and response.flags & dns.flags.AA
        assert [rdata.address for rdata in response.answer[0]] == [lab.address(1)]


def test_a_resolver_pointed_at_the_lab_finds_its_names(lab):
    lab.dns.set('db.lab.test.', lab.address(2), lab.address(3))
    host, port = lab.env['PROXMOX_DNS_SERVERS'].split(':')
    resolver = dns.resolver.Resolver(configure=False)
    resolver.nameservers, resolver.port = [host], int(port)
    assert sorted(rdata.address for rdata in resolver.resolve('db.lab.test', 'A')) == [lab.address(2), lab.address(3)]


def test_an_unknown_or_removed_name_in_the_zone_is_nxdomain(lab):
    assert query(lab, 'nothing.lab.test').rcode() == dns.rcode.NXDOMAIN
    lab.dns.set('web1', lab.address(1))
    lab.dns.remove('web1')
    assert query(lab, 'web1.lab.test').rcode() == dns.rcode.NXDOMAIN


def test_a_known_name_has_no_answer_of_another_type(lab):
    lab.dns.set('web1', lab.address(1))
    response = query(lab, 'web1.lab.test', 'AAAA')
    assert (response.rcode(), response.answer) == (dns.rcode.NOERROR, [])


def test_a_name_outside_the_zone_is_refused(lab):
    assert query(lab, 'example.com').rcode() == dns.rcode.REFUSED
    assert query(lab, 'example.com', tcp=True).rcode() == dns.rcode.REFUSED
