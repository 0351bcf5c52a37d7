# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster-level declarations of proxmops manifests (an Iso manifest here) and of a group_vars file beside them
(pve_isos) are merged by puls.proxmox.site, not replaced: both ISOs are planned and kept; one ISO declared in both
places from two URLs stops the run before any change, naming both places; so for an SDN zone of an SdnZone manifest and
a VNet of pve_sdn in it, and that zone declared in both places of two types. A repository of cluster objects alone
(no machine) is kept all the same, and prunes nothing.

Run inside a network namespace: hacking/netns-run .venv/bin/python -m pytest tests/integration/test_manifest_declarations.py -p no:xdist
"""

from __future__ import annotations

import lab_vms
import yaml
from lab.images import iso

from playbooks import run_playbook

SITE = '- import_playbook: puls.proxmox.site\n'
DEBIAN_12 = """\
apiVersion: proxmops.dev/v1
kind: Iso
metadata:
  name: debian-12
spec:
  source: {url}
  node: pve1
  storage: local
"""
WEB_01 = f"""\
apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: web-01
  node: pve1
spec:
  fromTemplate: {lab_vms.TEMPLATE}
  iso: debian-12.iso
  state: stopped
"""


def repository(lab, tmp_path, group_vars):
    """The manifests (web-01 with the ISO of an Iso manifest), the plugin's configuration, and group_vars/all.yml."""
    url, _sums = lab.serve('debian-12.iso', iso('DEBIAN12', {'readme.txt': b'Debian 12, as the lab serves it.\n'}))
    for path, text in {'isos/debian-12.yaml': DEBIAN_12.format(url=url), 'vms/web-01.yaml': WEB_01}.items():
        (tmp_path / 'proxmox' / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / 'proxmox' / path).write_text(text)
    (tmp_path / 'group_vars').mkdir(exist_ok=True)
    (tmp_path / 'group_vars' / 'all.yml').write_text(yaml.safe_dump(group_vars))
    config = tmp_path / 'cluster.proxmops.yml'
    config.write_text('plugin: puls.proxmox.manifests\npath: proxmox\n')
    (tmp_path / 'inventory.yml').write_text('all: {}\n')
    return url, config


def site(lab, tmp_path, config, name, check=False):
    return run_playbook(tmp_path, SITE, lab.env, check=check, name=name, extra_args=('-i', str(config)))


def test_the_isos_of_the_manifests_and_of_group_vars_are_both_kept(lab, tmp_path):
    tools_url, _sums = lab.serve('tools.iso', iso('TOOLS', {'readme.txt': b'Tools.\n'}))
    url, config = repository(lab, tmp_path, {'pve_isos': [{'filename': 'tools.iso', 'node': 'pve1', 'url': tools_url}]})
    writes = len(lab.writes())
    planned = site(lab, tmp_path, config, 'plan', check=True)
    assert planned.rc == 0, planned.stdout + planned.stderr
    assert planned.plans == {'tools.iso': ['create'], 'debian-12.iso': ['create'], 'web-01': ['create']}
    assert len(lab.writes()) == writes

    applied = site(lab, tmp_path, config, 'apply')
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert applied.plans == planned.plans
    assert lab.volume_bytes('local:iso/debian-12.iso') == lab.served.fetch(url)
    assert lab.volume_bytes('local:iso/tools.iso') == lab.served.fetch(tools_url)


def test_one_iso_declared_by_a_manifest_and_by_group_vars_from_two_urls_stops_the_run_naming_both(lab, tmp_path):
    other_url, _sums = lab.serve('other.iso', iso('OTHER', {'readme.txt': b'Another file.\n'}))
    _url, config = repository(lab, tmp_path, {'pve_isos': [{'filename': 'debian-12.iso', 'node': 'pve1', 'url': other_url}]})
    writes = len(lab.writes())
    for name, check in (('plan', True), ('apply', False)):
        run = site(lab, tmp_path, config, name, check=check)
        assert run.rc != 0, run.stdout
        assert (
            'Nothing was changed: ISO local:iso/debian-12.iso on node pve1 is declared twice and the two disagree on url: '
            f"pve_isos in {tmp_path / 'group_vars' / 'all.yml'} line 2 has '{other_url}', proxmox/isos/debian-12.yaml (document 1) has"
        ) in run.stdout, run.stdout
    assert len(lab.writes()) == writes


def test_a_repository_of_cluster_objects_alone_is_kept_and_prunes_nothing(lab, tmp_path):
    api = lab_vms.client(lab)
    lab_vms.clone(api, 150, 'stray-01', **lab_vms.owned(150))
    url, config = repository(lab, tmp_path, {})
    (tmp_path / 'proxmox' / 'vms' / 'web-01.yaml').unlink()
    config.write_text('plugin: puls.proxmox.manifests\npath: proxmox\nprune: true\n')
    writes = len(lab.writes())
    planned = site(lab, tmp_path, config, 'plan', check=True)
    assert planned.rc == 0, planned.stdout + planned.stderr
    # No machine: the owned stray is an orphan, never pruned by a fleet of no machine.
    assert planned.plans == {'debian-12.iso': ['create'], 'stray-01': ['orphan']}
    assert len(lab.writes()) == writes

    applied = site(lab, tmp_path, config, 'apply')
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert applied.plans == planned.plans
    assert lab.volume_bytes('local:iso/debian-12.iso') == lab.served.fetch(url)
    assert 'stray-01' in {entry['name'] for entry in api.cluster_vms()}
    writes = len(lab.writes())
    again = site(lab, tmp_path, config, 'again')
    assert again.rc == 0 and not again.changed, again.stdout
    assert again.plans == {'debian-12.iso': ['ok'], 'stray-01': ['orphan']} and len(lab.writes()) == writes


SDN_ZONE = """\
apiVersion: proxmops.dev/v1
kind: SdnZone
metadata:
  name: lab
spec:
  type: simple
"""


def test_an_sdn_zone_of_the_manifests_and_a_vnet_of_group_vars_are_both_kept_and_one_zone_declared_two_ways_stops_the_run(lab, tmp_path):
    (tmp_path / 'proxmox').mkdir()
    (tmp_path / 'proxmox' / 'lab.yaml').write_text(SDN_ZONE)
    config = tmp_path / 'cluster.proxmops.yml'
    config.write_text('plugin: puls.proxmox.manifests\npath: proxmox\n')
    (tmp_path / 'inventory.yml').write_text('all: {}\n')
    (tmp_path / 'group_vars').mkdir()
    group_vars = {'pve_nodes': lab.nodes, 'pve_sdn': {'vnets': [{'name': 'labnet', 'zone': 'lab'}]}}
    (tmp_path / 'group_vars' / 'all.yml').write_text(yaml.safe_dump(group_vars))
    planned = site(lab, tmp_path, config, 'plan', check=True)
    assert planned.rc == 0, planned.stdout + planned.stderr
    assert planned.plans == {'zone lab': ['create'], 'vnet labnet': ['create']} and lab.writes() == []
    applied = site(lab, tmp_path, config, 'apply')
    assert applied.rc == 0, applied.stdout + applied.stderr
    assert applied.plans == planned.plans
    running = lab.call(lambda: {kind: dict(objects) for kind, objects in lab.pve.sdn_running.items()})
    assert (set(running['zones']), set(running['vnets'])) == ({'lab'}, {'labnet'})

    # The zone declared in group_vars too, of another type: stopped before any change, both places named.
    group_vars['pve_sdn']['zones'] = [{'name': 'lab', 'type': 'vlan', 'bridge': 'vmbr0'}]
    (tmp_path / 'group_vars' / 'all.yml').write_text(yaml.safe_dump(group_vars))
    writes = len(lab.writes())
    for name, check in (('conflict-plan', True), ('conflict-apply', False)):
        run = site(lab, tmp_path, config, name, check=check)
        assert run.rc != 0, run.stdout
        place = f"Nothing was changed: SDN zone lab is declared twice and the two disagree on type: pve_sdn in {tmp_path / 'group_vars' / 'all.yml'} line"
        assert place in run.stdout and "has 'vlan', proxmox/lab.yaml (document 1) has 'simple'" in run.stdout, run.stdout
    assert len(lab.writes()) == writes
