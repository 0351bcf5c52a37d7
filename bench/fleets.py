# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The declared state the benchmark reconciles, written once for both sides: our inventory and playbook
(puls.proxmox.site), and the peer's playbook (community.proxmox.proxmox_kvm) over the same inventory."""

from __future__ import annotations

import subprocess
import sys

import yaml

TEMPLATE_VMID = 9017
TEMPLATE_NAME = 'ubuntu-24.04-cloud'
NODE = 'pve1'
FIRST_VMID = 1000
# The lab's block is a /24; the API, DNS and files use .1-.3, its gateway .254, so .11-.253 are free addresses.
FIRST_HOST = 11
MAX_MACHINES = 243
SSH_USER = 'alice'
TAGS = ['bench', 'web']
OWNER_TAG = 'puls-managed'
PROVISION_FILE = 'hello.yml'

PROVISION_PLAYBOOK = """\
- name: Say hello
  hosts: all
  gather_facts: false
  tasks:
    - name: Leave a mark
      ansible.builtin.shell: echo "hello from {{ inventory_hostname }}" >> "$HOME/hello"
      changed_when: true
"""

OURS_PLAYBOOK = '- import_playbook: puls.proxmox.site\n'


def machine_name(index):
    return f'vm{index:03d}'


def address(lab, index):
    """The static address of machine index (from 1). Past lab.address()'s 89 the bench uses the rest of the
    block: the bench declares no DHCP machine, so the DHCP pool's addresses are free."""
    if not 1 <= index <= MAX_MACHINES:
        raise ValueError(f'the bench declares 1..{MAX_MACHINES} machines')
    return lab.block.host(FIRST_HOST + index - 1)


def ssh_key(workdir):
    """(private key path, public key line) of a key pair made once per work directory."""
    path = workdir / 'id_ed25519'
    if not path.exists():
        subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'bench', '-f', str(path)], check=True)
    return path, path.with_suffix('.pub').read_text(encoding='ascii').strip()


def write_inventory(lab, workdir, count, provision=True, pin_vmid=True, clone_concurrency=None, dhcp=False):
    """Machines 1..count: a clone of the template with cores, memory, a static address (dhcp: stopped, with DHCP, for
    more machines than the lab's block has addresses), tags and (provision) one playbook to apply; clone_concurrency sets
    pve_clone_concurrency (ours only). Returns the inventory's path."""
    key, public = ssh_key(workdir)
    hosts = {}
    for index in range(1, count + 1):
        host = {
            'pve_image': str(TEMPLATE_VMID),
            'pve_node': NODE,
            'pve_cores': 2,
            'pve_memory': 1024,
            'pve_tags': list(TAGS),
        }
        # Stopped with DHCP: a running VM is an SSH guest of the lab, at an address of its block.
        host.update({'pve_ip': 'dhcp', 'pve_power': 'stopped'} if dhcp else {'pve_ip': f'{address(lab, index)}/24', 'pve_gateway': lab.gateway})
        if pin_vmid:
            host['pve_vmid'] = FIRST_VMID + index
        if provision:
            host['pve_provision'] = [PROVISION_FILE]
        hosts[machine_name(index)] = host
    common = {
        'pve_ssh_user': SSH_USER,
        'pve_ssh_keys': [public],
        'pve_ssh_private_key_file': str(key),
        'pve_guest_python': sys.executable,
        'pve_provision_dir': str(workdir),
        'pve_nodes': lab.nodes,
    }
    if clone_concurrency:
        common['pve_clone_concurrency'] = clone_concurrency
    inventory = {'all': {'vars': common, 'children': {'pve_templates': {'hosts': {}}, 'pve_vms': {'hosts': hosts}}}}
    path = workdir / 'inventory.yml'
    path.write_text(yaml.safe_dump(inventory, sort_keys=False), encoding='utf-8')
    (workdir / PROVISION_FILE).write_text(PROVISION_PLAYBOOK, encoding='utf-8')
    return path


def write_ours(workdir):
    path = workdir / 'ours.yml'
    path.write_text(OURS_PLAYBOOK, encoding='utf-8')
    return path


def write_peer(lab, workdir):
    """The peer's reconcile of the same inventory, as its users write it: clone with the VMID pinned, the update
    that sets cores, memory and cloud-init (and the tags, ours among them, so that both sides declare the same
    state), then started. Certificates are verified against the lab's CA (REQUESTS_CA_BUNDLE, see peer_env)."""
    proxmox = {
        'api_host': lab.block.api,
        'api_port': 8006,
        'api_user': lab.user,
        'api_token_id': lab.token_name,
        'api_token_secret': '{{ lookup("ansible.builtin.env", "BENCH_PEER_TOKEN_SECRET") }}',
        'validate_certs': True,
    }
    kvm = 'community.proxmox.proxmox_kvm'
    tasks = [
        {
            'name': 'Clone the template with the VMID pinned',
            kvm: {
                'clone': TEMPLATE_NAME,
                'vmid': TEMPLATE_VMID,
                'newid': '{{ pve_vmid }}',
                'name': '{{ inventory_hostname }}',
                'node': NODE,
                'full': True,
                'storage': 'local-lvm',
                'format': 'unspecified',
                'timeout': 300,
            },
        },
        {
            'name': 'Set cores, memory and cloud-init',
            kvm: {
                'vmid': '{{ pve_vmid }}',
                'node': NODE,
                'name': '{{ inventory_hostname }}',
                'update': True,
                'cores': '{{ pve_cores }}',
                'memory': '{{ pve_memory }}',
                'ciuser': '{{ pve_ssh_user }}',
                'sshkeys': '{{ pve_ssh_keys | join("\n") }}',
                'ipconfig': {'ipconfig0': 'ip={{ pve_ip }},gw={{ pve_gateway }}'},
                'tags': '{{ pve_tags + ["' + OWNER_TAG + '"] }}',
                'timeout': 300,
            },
        },
        {'name': 'Start the VM', kvm: {'vmid': '{{ pve_vmid }}', 'node': NODE, 'state': 'started', 'timeout': 300}},
    ]
    for task in tasks:
        task.update({'delegate_to': 'localhost'})
    play = {
        'name': 'Reconcile the VMs with community.proxmox',
        'hosts': 'pve_vms',
        'gather_facts': False,
        'module_defaults': {'group/community.proxmox.proxmox': proxmox},
        'tasks': tasks,
    }
    path = workdir / 'peer.yml'
    path.write_text(yaml.safe_dump([play], sort_keys=False), encoding='utf-8')
    return path


def ours_env(lab):
    return dict(lab.env)


def peer_env(lab):
    """The peer takes no CA file: requests reads it from REQUESTS_CA_BUNDLE, so validate_certs stays true."""
    return {'BENCH_PEER_TOKEN_SECRET': lab.token_secret, 'REQUESTS_CA_BUNDLE': str(lab.cafile)}
