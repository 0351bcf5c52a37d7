"""The filter puls.proxmox.path_prefixes, and the looped include it is for, run by the real ansible-playbook (no lab):
hosts whose paths share a file after different ones still run their own files in their order."""

from __future__ import annotations

from integration.playbooks import run_playbook

from ansible_collections.puls.proxmox.plugins.filter.path_prefixes import path_prefixes

PLAY = '''\
- name: Take each host's path
  hosts: all
  gather_facts: false
  tasks:
    - name: Take the steps
      ansible.builtin.include_tasks:
        file: "{{ step | last }}.yml"
      loop: "{{ path | puls.proxmox.path_prefixes }}"
      loop_control:
        loop_var: step

    - name: Show the steps taken
      ansible.builtin.debug:
        var: taken
'''


def test_the_prefixes_of_a_path_come_shortest_first():
    assert path_prefixes(['vm', 'guest_provision', 'replace']) == [['vm'], ['vm', 'guest_provision'], ['vm', 'guest_provision', 'replace']]
    assert path_prefixes(('lease_refused',)) == [['lease_refused']]
    assert path_prefixes([]) == []


def test_hosts_whose_paths_differ_before_a_shared_file_each_take_their_files_in_order(tmp_path):
    for step in ('vm', 'container', 'provision'):
        (tmp_path / f'{step}.yml').write_text(f'- name: Take {step}\n  ansible.builtin.set_fact:\n    taken: "{{{{ taken | default([]) + [\'{step}\'] }}}}"\n')
    paths = {'vm1': ['vm', 'provision'], 'ct1': ['container', 'provision'], 'vm2': ['vm', 'provision'], 'vm3': ['vm']}
    inventory = {'all': {'hosts': {host: {'path': path, 'ansible_connection': 'local'} for host, path in paths.items()}}}
    run = run_playbook(tmp_path, PLAY, {}, inventory=inventory)
    assert run.rc == 0, run.stdout + run.stderr
    assert {host: run.one('Show the steps taken', host)['taken'] for host in paths} == paths
