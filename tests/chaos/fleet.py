# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The declared state of the chaos campaign, in the shape of examples/inventory: an ISO, a golden template baked with
a playbook, VMs cloned from it (a static address and a linked clone, one resolved by DNS, one with user-data, one
taking over from web-old by DHCP), pruning on; and the guests nobody declares: web-old, a protected owned VM and a
foreign one. Mutations change it between rounds so that the faults hit real work.

Every provision playbook logs `begin FILE VERSION` and `end FILE VERSION` to ~/chaos-provision.log in the guest, so
the campaign can tell which version of a file last ran there and whether it ended (invariants.py).
"""

from __future__ import annotations

import copy
import subprocess
import sys

from lab import images

from ansible_collections.puls.proxmox.plugins.module_utils._api import PveClient
from ansible_collections.puls.proxmox.plugins.module_utils._closure import provision_hashes

TEMPLATE = 'golden-web'
BASE_TEMPLATE_VMID = 9017
PROVISION_LOG = 'chaos-provision.log'
OWNER_TAG = 'puls-managed'
PROTECTED = 'keep-db'
FOREIGN = 'handmade'
OLD = 'web-old'
# Static addresses: lab.address(1..) for web1, web2 (by DNS) and replacements after them.
FIRST_FREE_ADDRESS = 3
# Mutations and their weights: most rounds change something.
MUTATIONS = (('none', 3), ('cores', 2), ('provision change', 2), ('provision new file', 1), ('replace', 1), ('template rebuild', 1))

PLAYBOOK = """\
# {file}, version {version}: logs its begin and end in the guest, with a step between that can fail like any other.
- name: Chaos provision file {file}
  hosts: all
  gather_facts: false
  become: false
  tasks:
    - name: Log the begin
      ansible.builtin.shell: echo "begin {file} {version}" >> "$HOME/{log}"
      changed_when: true
    - name: Work
      ansible.builtin.command: "true"
      changed_when: true
    - name: Log the end
      ansible.builtin.shell: echo "end {file} {version}" >> "$HOME/{log}"
      changed_when: true
"""


class Fleet:
    """What the inventory declares now, the provision files on disk and every hash each file version has had."""

    def __init__(self, lab, workdir, small=False):
        """small: no golden template (VMs clone the lab's base template) and only web1 and web4, for a short run."""
        self.lab = lab
        self.workdir = workdir
        self.playbooks = workdir / 'playbooks'
        self.playbooks.mkdir(parents=True, exist_ok=True)
        self.api = PveClient(lab.url, lab.user, lab.token_name, lab.token_secret, ca_path=str(lab.cafile))
        self.key = workdir / 'id_ed25519'
        subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'chaos', '-f', str(self.key)], check=True)
        # file -> version now; file -> {hash: version} of every version written.
        self.versions = {}
        self.hash_versions = {}
        self._next_address = FIRST_FREE_ADDRESS
        for name in ('base.yml', 'app.yml', 'extra.yml'):
            self.bump(name)
        lab.dns.set('web2', lab.address(2))
        url, sums = lab.serve('chaos-tools.iso', images.iso('CHAOS', {'tools.txt': b'chaos tools\n'}))
        self.isos = [{'filename': 'chaos-tools.iso', 'storage': 'local', 'node': 'pve1', 'url': url, 'content': 'iso', 'checksum': 'sha256:' + sums['sha256']}]
        self.templates = (
            {}
            if small
            else {
                TEMPLATE: {
                    'pve_image': 'ubuntu-24.04-cloud',
                    'pve_node': 'pve1',
                    'pve_tags': ['golden', 'web'],
                    'pve_cores': 1,
                    'pve_memory': 1024,
                    'pve_storage': 'local-lvm',
                    'pve_bridge': 'vmbr0',
                    'pve_provision': ['base.yml'],
                }
            }
        )
        self.image = str(BASE_TEMPLATE_VMID) if small else TEMPLATE
        dns = {'pve_nameservers': [lab.dns.server.split(':')[0]], 'pve_searchdomain': lab.domain}
        self.vms = {
            'web1': dict(pve_ip=f'{lab.address(1)}/24', pve_gateway=lab.gateway, pve_linked_clone=True, pve_provision=['app.yml'], **dns),
            'web2': {'pve_storage': 'local-lvm', 'pve_provision': ['app.yml']},
            'web3': {'pve_storage': 'local-lvm', 'pve_user_data': '#cloud-config\nhostname: web3\n'},
            'web4': {'pve_storage': 'local-lvm', 'pve_ip': 'dhcp', 'pve_apply_mode': 'reboot', 'pve_replace': OLD, 'pve_provision': ['app.yml']},
        }
        if small:
            for name in ('web2', 'web3'):
                del self.vms[name]
        # name -> the machine it replaces, for every replacement declared so far.
        self.replacements = {'web4': OLD}
        self._seed_guests()

    # ------------------------------------------------------------ the guests nobody declares

    def _clone(self, vmid, name, **config):
        upid = self.api.create_vm(f'/nodes/pve1/qemu/{BASE_TEMPLATE_VMID}/clone', vmid, name=name)
        self.api.wait_task(upid, 60)
        self.api.put(f'/nodes/pve1/qemu/{vmid}/config', **config)
        self.api.run_task('POST', f'/nodes/pve1/qemu/{vmid}/status/start')

    def _seed_guests(self):
        self._clone(150, OLD, tags=f'demo;{OWNER_TAG}', description='The web server web4 takes over from.')
        self._clone(151, PROTECTED, tags=OWNER_TAG, protection=1, description='Database: protected, never pruned.')
        self._clone(152, FOREIGN, description='Made by hand: no owner tag, never touched.')

    # ------------------------------------------------------------ files

    def bump(self, name):
        """Write the next version of provision file name and learn its hash."""
        version = self.versions.get(name, 0) + 1
        self.versions[name] = version
        (self.playbooks / name).write_text(PLAYBOOK.format(file=name, version=version, log=PROVISION_LOG), encoding='utf-8')
        file_hash = provision_hashes([name], self.playbooks).hashes[name]
        self.hash_versions.setdefault(name, {})[file_hash] = version

    def current_hashes(self, files):
        return provision_hashes(list(files), self.playbooks).hashes

    # ------------------------------------------------------------ the inventory

    def inventory(self):
        common = {
            'pve_ssh_user': 'ubuntu',
            'pve_ssh_keys': [self.key.with_suffix('.pub').read_text().strip()],
            'pve_ssh_private_key_file': str(self.key),
            'pve_guest_python': sys.executable,
            'pve_provision_dir': str(self.playbooks),
            'pve_nodes': self.lab.nodes,
            'pve_isos': self.isos,
            'pve_prune': True,
            # A build VM left behind blocks the clones of its template this long, not 30 minutes.
            'pve_template_wait_timeout': 60,
            'pve_template_wait_delay': 2,
            'pve_ssh_timeout': 60,
            'pve_cloud_init_timeout': 120,
        }
        # A linked clone (web1) takes no storage: the others name theirs.
        vm_defaults = {'pve_image': self.image, 'pve_cores': 1, 'pve_memory': 1024, 'pve_bridge': 'vmbr0', 'pve_tags': ['chaos', 'web'], 'pve_power': 'running'}
        return {
            'all': {
                'vars': common,
                'children': {'pve_templates': {'hosts': copy.deepcopy(self.templates)}, 'pve_vms': {'vars': vm_defaults, 'hosts': copy.deepcopy(self.vms)}},
            }
        }

    def declared(self, name):
        """The variables of VM name with the group's defaults."""
        return dict(self.inventory()['all']['children']['pve_vms']['vars'], **self.vms[name])

    # ------------------------------------------------------------ mutations

    def mutate(self, rng, number):
        """Change the declared state (or not), as drawn from rng; returns what changed."""
        kinds = [(name, weight) for name, weight in MUTATIONS if self.templates or name != 'template rebuild']
        kind = rng.choices([name for name, _weight in kinds], [weight for _name, weight in kinds])[0]
        provisioned = sorted(name for name, host in self.vms.items() if host.get('pve_provision'))
        if kind == 'cores':
            name = rng.choice(sorted(self.vms))
            cores = 3 - self.declared(name)['pve_cores']
            self.vms[name]['pve_cores'] = cores
            return f'cores of {name} -> {cores}'
        if kind == 'provision change':
            self.bump('app.yml')
            return 'app.yml v{0}'.format(self.versions['app.yml'])
        if kind == 'provision new file':
            without = [name for name in provisioned if 'extra.yml' not in self.vms[name]['pve_provision']]
            if not without:
                self.bump('extra.yml')
                return 'extra.yml v{0}'.format(self.versions['extra.yml'])
            name = rng.choice(without)
            self.vms[name]['pve_provision'].append('extra.yml')
            return f'{name} + extra.yml'
        if kind == 'replace':
            old = rng.choice(provisioned)
            new = f'app{number}'
            address = self.lab.address(self._next_address)
            self._next_address += 1
            host = dict(self.vms.pop(old))
            host.pop('pve_replace', None)
            host.update(pve_ip=f'{address}/24', pve_gateway=self.lab.gateway, pve_replace=old)
            self.vms[new] = host
            self.replacements[new] = old
            return f'{new} replaces {old}'
        if kind == 'template rebuild':
            self.bump('base.yml')
            return 'base.yml v{0} (rebuild)'.format(self.versions['base.yml'])
        return 'none'
