# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The default of pve_provision_dir: with the collection's own site playbook, relative provision files resolve
against the inventory's directory (the collection's playbooks/ holds none of the user's files)."""

from __future__ import annotations

import sys

import lab_vms
import pytest
import yaml

from playbooks import run_playbook


@pytest.mark.lab(time_scale=0.01)
def test_a_relative_provision_file_resolves_next_to_the_inventory_under_puls_proxmox_site(lab, tmp_path):
    key, public = lab_vms.ssh_key(tmp_path)
    # Neither the working directory (tmp_path) nor the playbook's directory (the collection's) holds mark.sh.
    inventory = tmp_path / 'inventories' / 'staging'
    inventory.mkdir(parents=True)
    (inventory / 'mark.sh').write_text('echo "marked next to the inventory" >> "$HOME/marks"\n')
    (inventory / 'hosts.yml').write_text(
        yaml.safe_dump(
            {
                'all': {
                    'vars': {'pve_ssh_user': 'alice', 'pve_ssh_keys': [public], 'pve_ssh_private_key_file': str(key), 'pve_guest_python': sys.executable},
                    'children': {
                        'pve_vms': {
                            'hosts': {'web1': {'pve_image': '9017', 'pve_ip': f'{lab.address(1)}/24', 'pve_gateway': lab.gateway, 'pve_provision': ['mark.sh']}}
                        }
                    },
                }
            }
        )
    )
    # run_playbook's own inventory.yml stays empty: hosts.yml is the only source. It is named as a file: Ansible reads
    # every file of an inventory directory as a source, and mark.sh, which parses as none, would fail the run.
    (tmp_path / 'inventory.yml').write_text('all: {}\n')

    run = run_playbook(tmp_path, '- import_playbook: puls.proxmox.site\n', lab.env, name='site', extra_args=('-i', str(inventory / 'hosts.yml')))
    assert run.rc == 0, run.stdout + run.stderr
    assert run.plans == {'web1': ['create', 'provision mark.sh']}
    (web1,) = [entry for entry in lab_vms.client(lab).cluster_vms() if entry['name'] == 'web1']
    assert (lab.guest(int(web1['vmid'])).home / 'marks').read_text() == 'marked next to the inventory\n'
    assert '[puls-provision: mark.sh=' in lab_vms.notes(lab_vms.client(lab), int(web1['vmid']))
