# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_guest_info against the lab: its EXAMPLES as they are, on owned, protected and foreign guests, and a template
with a linked clone."""

from __future__ import annotations

import lab_vms
import yaml
from playbooks import run_playbook

from ansible_collections.puls.proxmox.plugins.modules import pve_guest_info


def test_examples_list_owned_guests_with_protection_and_a_templates_linked_clones(lab, tmp_path):
    api = lab_vms.client(lab)
    lab_vms.clone(api, 120, 'web1', tags='puls-managed;web', protection=1)
    lab_vms.clone(api, 121, 'base1', tags='puls-managed')
    api.run_task('POST', '/nodes/pve1/qemu/121/template')
    api.wait_task(api.create_vm('/nodes/pve1/qemu/121/clone', 122, name='linked1', full=0), 60)
    lab_vms.clone(api, 123, 'foreign1')
    setup = len(lab.writes())

    play = [{'name': 'Examples', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': yaml.safe_load(pve_guest_info.EXAMPLES)}]
    run = run_playbook(tmp_path, play, lab.env, check=True)
    assert run.rc == 0, run.stdout + run.stderr
    owned = {guest['name']: guest for guest in run.one('List the guests this collection manages, with their protection')['guests']}
    # A clone inherits its template's tags, the owner tag too.
    assert sorted(owned) == ['base1', 'linked1', 'web1']
    assert owned['web1'] == dict(vmid=120, name='web1', node='pve1', type='qemu', status='stopped', template=False,
                                 tags=['puls-managed', 'web'], owned=True, protected=True, linked_clones=[])
    assert owned['base1']['template'] and owned['base1']['linked_clones'] == ['linked1 (122)']
    assert run.one('Show the protected ones')['msg'] == ['web1']
    assert run.one('Show its VMID and node')['msg'] == "[120] on ['pve1']"
    assert not any(result['result'].get('changed') for result in run.results)
    assert len(lab.writes()) == setup
