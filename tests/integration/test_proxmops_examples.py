# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""proxmops' own example manifests, as proxmops ships them but for the lab's addresses, read by the inventory plugin
puls.proxmox.manifests beside a group_vars file and reconciled by puls.proxmox.site on an empty lab: the check run plans
them and writes nothing, the real run converges them (the container's debian-12-standard downloaded from the node's
appliance index), and the second run changes nothing (no write, no apply of the node's network, no SSH connection).

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_proxmops_examples.py -p no:xdist
"""

from __future__ import annotations

import pytest
from lab.images import CONTAINER_TEMPLATE, iso
from lab.pve.network import PHYSICAL_NICS, parse

from playbooks import run_playbook

SITE = '- import_playbook: puls.proxmox.site\n'

# The four files of proxmops' examples/proxmox/ (github.com/prop4n/proxmops), public reference data: networks/vmbr0.yaml
# at commit b43e7d20caaf4b0e0618b5b910c2fabf46e95aaa, the others at be77ae2e9654efdabc47e96e58787dc0ea1452da. Changed
# only where the lab must differ, each change said beside it: the node pve-node1 is the lab's pve1; proxmops' /24 of
# the examples is the lab's loopback block, where the node (its .1 there, vmbr0's address and the container's gateway)
# is at NODE_ADDRESS and the container's .53 at lab.address(43), its .53 too; the ISO comes from the lab's file server,
# with its real sha256 (proxmops' is a placeholder). No address of proxmops' examples is kept, not even in a comment.
# What proxmops has no place for is in group_vars/all.yml beside the plugin's configuration (GROUP_VARS).
VMBR0 = """\
apiVersion: proxmops.dev/v1
kind: Network
metadata:
  name: vmbr0
  node: pve1                        # proxmops: pve-node1
spec:
  type: bridge
  ports: [eno1]
  vlanAware: true
  cidr: {node_address}/24           # proxmops: the .1 of its /24, the node's own address
"""
# The two opt-ins the collection asks before it takes over the installer's vmbr0 and changes the bridge that carries
# the node's address (pve_node_network's adopt and allow_management_change; docs/manifests.md#networks), given for the
# node in group_vars and merged with the node's entry from vmbr0.yaml. Without them the run is refused before any
# change. The declared address stays the node's own, as in proxmops' example: the run makes vmbr0 VLAN-aware and marks
# it the collection's, and cuts nothing off.
GROUP_VARS = """\
pve_networks:
  - node: pve1
    adopt: true
    allow_management_change: true
"""
WEB_01 = """\
apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: web-01
  node: pve1                        # proxmops: pve-node1
  tags: [prod, web]
spec:
  vmid: 101
  cores: 4
  memory: 8192
  disks:
    - storage: local-lvm
      size: 40G
  net:
    - bridge: vmbr0
      model: virtio
  iso: debian-12.iso
  state: running
"""
DNS_01 = """\
apiVersion: proxmops.dev/v1
kind: Container
metadata:
  name: dns-01
  node: pve1                        # proxmops: pve-node1
  tags: [infra, dns]
spec:
  vmid: 201
  cores: 1
  memory: 512
  rootfs:
    storage: local-lvm
    size: 8G
  net:
    - bridge: vmbr0
      ip: {dns_address}/24          # proxmops: the .53 of its /24
      gw: {node_address}            # proxmops: the .1, the node's address
  template: debian-12-standard
  state: running
"""
DEBIAN_12 = """\
apiVersion: proxmops.dev/v1
kind: Iso
metadata:
  name: debian-12
spec:
  source: {url}                     # proxmops: https://cdimage.debian.org/cdimage/release/current/amd64/iso-cd/debian-12.iso
  node: pve1                        # proxmops: pve-node1
  storage: local
  checksum:
    algo: sha256
    value: {sha256}                 # proxmops: 0123abcd... (a placeholder)
"""


def site(lab, tmp_path, config, name, check=False):
    run = run_playbook(tmp_path, SITE, lab.env, check=check, name=name, extra_args=('-i', str(config)))
    assert run.rc == 0, run.stdout + run.stderr
    return run


def network_applies(lab):
    """The requests that applied pve1's network (PUT /nodes/pve1/network, the reload)."""
    return [r for r in lab.writes() if r.method == 'PUT' and r.path.rstrip('/').endswith('/nodes/pve1/network')]


@pytest.mark.slow(minutes=2)
def test_the_proxmops_example_manifests_are_planned_converged_and_then_left_alone(lab, tmp_path):
    node_address = lab.block.node(1)
    url, sums = lab.serve('debian-12.iso', iso('DEBIAN12', {'readme.txt': b'The Debian 12 ISO of proxmops examples, as the lab serves it.\n'}))
    manifests = {
        'networks/vmbr0.yaml': VMBR0.format(node_address=node_address),
        'vms/web-01.yaml': WEB_01,
        'lxc/dns-01.yaml': DNS_01.format(dns_address=lab.address(43), node_address=node_address),
        'isos/debian-12.yaml': DEBIAN_12.format(url=url, sha256=sums['sha256']),
    }
    for path, text in manifests.items():
        (tmp_path / 'proxmox' / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / 'proxmox' / path).write_text(text)
    # The plugin's configuration as docs/manifests.md has it: guests tagged by proxmops are the collection's too.
    config = tmp_path / 'cluster.proxmops.yml'
    config.write_text('plugin: puls.proxmox.manifests\npath: proxmox\nowner_tag: managed-by-proxmops\n')
    (tmp_path / 'group_vars').mkdir()
    (tmp_path / 'group_vars' / 'all.yml').write_text(GROUP_VARS)
    (tmp_path / 'inventory.yml').write_text('all: {}\n')

    planned = site(lab, tmp_path, config, 'plan', check=True)
    assert lab.writes() == []
    assert planned.plans == {
        'pve1/vmbr0': ['update'],
        'debian-12.iso': ['create'],
        CONTAINER_TEMPLATE: ['create'],
        'web-01': ['create'],
        'dns-01': ['create'],
    }

    applied = site(lab, tmp_path, config, 'apply')
    assert applied.plans == planned.plans
    assert len(network_applies(lab)) == 1
    current, staged = lab.call(lambda: lab.pve.network_files('pve1'))
    vmbr0 = parse(current, PHYSICAL_NICS)['ifaces']['vmbr0']
    assert staged is None
    assert (vmbr0['bridge_ports'], vmbr0['bridge_vlan_aware'], vmbr0['cidr']) == ('eno1', 1, f'{node_address}/24')
    assert 'puls-managed' in vmbr0['comments']
    vm = lab.call(lambda: {vm.vmid: dict(vm.config) for vm in lab.pve.vms})[101]
    assert (vm['name'], str(vm['cores']), str(vm['memory']), vm['ide2'].split(',')[0]) == ('web-01', '4', '8192', 'local:iso/debian-12.iso')
    assert 'virtio=' in vm['net0'] and 'bridge=vmbr0' in vm['net0'] and vm['scsi0'].endswith('size=40G')
    assert set(vm['tags'].split(';')) == {'prod', 'web', 'managed-by-proxmops'}
    ct = lab.call(lambda: {ct.vmid: dict(ct.config) for ct in lab.pve.cts})[201]
    assert (ct['hostname'], str(ct['cores']), str(ct['memory'])) == ('dns-01', '1', '512')
    assert f'ip={lab.address(43)}/24' in ct['net0'] and f'gw={node_address}' in ct['net0'] and 'bridge=vmbr0' in ct['net0']
    assert lab.volume_bytes('local:iso/debian-12.iso') == lab.served.fetch(url)
    assert lab.volume_bytes(f'local:vztmpl/{CONTAINER_TEMPLATE}') == lab.served.fetch(lab.served.url(CONTAINER_TEMPLATE))
    assert [r.path for r in lab.writes() if r.path.endswith('/aplinfo')] == ['/api2/json/nodes/pve1/aplinfo']

    # Nothing changed: no write at all (so no apply of the node's network), and no SSH connection to a guest.
    writes, connections = len(lab.writes()), lab.ssh_connections()
    again = site(lab, tmp_path, config, 'again')
    assert not again.changed, again.stdout
    # The container exists, so its OS template is not looked at again.
    assert again.plans == dict.fromkeys(set(planned.plans) - {CONTAINER_TEMPLATE}, ['ok'])
    assert (len(lab.writes()), lab.ssh_connections()) == (writes, connections)
