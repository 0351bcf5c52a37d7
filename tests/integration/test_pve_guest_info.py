# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_guest_info against the lab: its EXAMPLES as they are, on owned, protected and foreign guests, and a template
with a linked clone."""

from __future__ import annotations

import lab_vms
import yaml

from ansible_collections.puls.proxmox.plugins.modules import pve_guest_info
from playbooks import run_playbook


def test_examples_list_owned_guests_with_protection_and_a_templates_linked_clones(lab, tmp_path):
    api = lab_vms.client(lab)
    web1 = dict(lab_vms.owned(120), protection=1)
    web1['tags'] = 'puls-managed;web'
    lab_vms.clone(api, 120, 'web1', **web1)
    # A template as pve_template makes it: its template block is what tells its clones on LVM-thin.
    lab_vms.clone(api, 121, 'base1', **lab_vms.owned(121, notes='[puls-template: spec=0123456789ab]'))
    api.run_task('POST', '/nodes/pve1/qemu/121/template')
    api.wait_task(api.create_vm('/nodes/pve1/qemu/121/clone', 122, name='linked1', full=0), 60)
    lab_vms.clone(api, 123, 'foreign1')
    lab_vms.clone(api, 124, 'old1', tags='puls-managed')  # as the release before the owner record tagged its VMs
    setup = len(lab.writes())

    play = [{'name': 'Examples', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': yaml.safe_load(pve_guest_info.EXAMPLES)}]
    run = run_playbook(tmp_path, play, lab.env, check=True)
    assert run.rc == 0, run.stdout + run.stderr
    tagged = {guest['name']: guest for guest in run.one('List the guests this collection manages, with their protection')['guests']}
    # A clone inherits its template's tags, the owner tag too: it is listed, but not owned.
    assert sorted(tagged) == ['base1', 'linked1', 'old1', 'web1']
    assert tagged['web1'] == {
        'vmid': 120,
        'name': 'web1',
        'node': 'pve1',
        'type': 'qemu',
        'status': 'stopped',
        'template': False,
        'tags': ['puls-managed', 'web'],
        'owned': True,
        'ownership': 'owned',
        'provisioned': False,
        'protected': True,
        'linked_clones': [],
    }
    assert tagged['base1']['template'] and tagged['base1']['owned'] and tagged['base1']['linked_clones'] == ['linked1 (122)']
    assert {name: (guest['owned'], guest['ownership']) for name, guest in tagged.items() if name != 'web1'} == {
        'base1': (True, 'owned'),
        'linked1': (False, 'inherited'),
        'old1': (False, 'legacy'),
    }
    assert run.one('Show the protected ones')['msg'] == ['web1']
    assert run.one('Show the guests an earlier release tagged, which have no owner record yet')['msg'] == ['old1']
    assert run.one('Show its VMID and node')['msg'] == "[120] on ['pve1']"
    assert not any(result['result'].get('changed') for result in run.results)
    assert len(lab.writes()) == setup


def test_a_clone_made_by_hand_of_an_owned_template_is_not_counted_owned(lab, tmp_path):
    api = lab_vms.client(lab)
    lab_vms.clone(api, 121, 'base1', **lab_vms.owned(121, notes='Golden image of team A'))
    api.run_task('POST', '/nodes/pve1/qemu/121/template')
    api.wait_task(api.create_vm('/nodes/pve1/qemu/121/clone', 122, name='handmade1', full=1), 60)
    play = [
        {
            'name': 'List',
            'hosts': 'localhost',
            'connection': 'local',
            'gather_facts': False,
            'tasks': [{'name': 'List the owned guests', 'puls.proxmox.pve_guest_info': {'owned_only': True}}],
        }
    ]
    run = run_playbook(tmp_path, play, lab.env)
    assert run.rc == 0, run.stdout + run.stderr
    guests = {guest['name']: (guest['owned'], guest['ownership']) for guest in run.one('List the owned guests')['guests']}
    assert guests == {'base1': (True, 'owned'), 'handmade1': (False, 'inherited')}
