# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's modules run in the task's worker process (plugins/plugin_utils/_in_worker.py) where they would run
in ansible-playbook's own Python: the same play with pve_direct_execution true (the default) and false returns the same
results, changes the cluster the same way, keeps a secret out of the output either way, and only the second starts a
module process (an AnsiballZ file kept by ANSIBLE_KEEP_REMOTE_FILES).

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_direct_execution.py
"""

from __future__ import annotations

from pve_vm_plays import cluster_vms, inventory, vm_env, vm_play, vm_task

from playbooks import run_playbook

TEMPLATE = 9017
PASSWORD = 'Direct-Secret-Pass-7'


def compared(result):
    """A task result without what differs between two runs of the same module (the kept AnsiballZ file's path)."""
    return {key: value for key, value in result.items() if key not in ('_ansible_no_log', 'invocation')}


def test_a_module_run_in_the_worker_returns_what_its_own_process_returns_and_starts_none(lab, tmp_path):
    outcomes = {}
    for direct in (False, True):
        workdir = tmp_path / f'direct-{direct}'
        workdir.mkdir()
        name = f'direct-{str(direct).lower()}'
        vms = {name: {'image': str(TEMPLATE), 'cores': 2, 'ci_user': 'ops', 'ci_password': PASSWORD, 'tags': ['puls-test']}}
        hosts = inventory(vms)
        hosts['all']['vars'].update(pve_direct_execution=direct)
        bad = dict(vm_task('Refuse a VM of no cores'), ignore_errors=True)
        bad['puls.proxmox.pve_vm'] = dict(bad['puls.proxmox.pve_vm'], cores=0)
        env = vm_env(lab, workdir, ANSIBLE_KEEP_REMOTE_FILES='1', ANSIBLE_REMOTE_TMP=str(workdir / 'remote-tmp'))
        planned = run_playbook(workdir, vm_play(vm_task('Plan the VM'), bad), env, inventory=hosts, check=True, name='plan')
        applied = run_playbook(workdir, vm_play(vm_task('Create the VM')), env, name='apply')
        assert planned.rc == 0 and applied.rc == 0, planned.stdout + applied.stdout
        for run in (planned, applied):
            assert PASSWORD not in run.stdout + run.stderr
        processes = sorted(path.name for path in (workdir / 'remote-tmp').rglob('AnsiballZ_*.py'))
        outcomes[direct] = ([compared(record['result']) for record in planned.results + applied.results], processes)
    (classic, classic_processes), (direct, direct_processes) = outcomes[False], outcomes[True]
    # Three module runs each: the plan, the refusal, the creation.
    assert classic_processes == ['AnsiballZ_pve_vm.py'] * 3 and direct_processes == []
    assert len(classic) == len(direct) == 3
    for ours, theirs in zip(classic, direct):
        # The VM's own name and VMID differ; everything else is the same.
        assert str(ours).replace('direct-false', 'NAME') == str(theirs).replace('direct-true', 'NAME').replace(
            str(theirs.get('vmid')), str(ours.get('vmid'))
        ), (ours, theirs)
    # The refusal names the option, as a failed module's result does (the recorded result carries no 'failed' key).
    refusals = [result for result in direct if result.get('option') == 'cores']
    assert len(refusals) == 1 and refusals[0]['msg'].startswith('cores must be'), direct
    # The two VMs are configured alike but for what is the VM's own: its name, VMID (in volume names and the owner
    # mark), MAC address and generated ids.
    own = ('name', 'smbios1', 'vmgenid', 'net0')
    created = {
        config['name']: str({key: value for key, value in sorted(config.items()) if key not in own}).replace(f'-{vmid}-', '-N-').replace(f'={vmid}]', '=N]')
        for vmid, config in cluster_vms(lab).items()
        if config.get('name', '').startswith('direct-')
    }
    assert set(created) == {'direct-false', 'direct-true'} and created['direct-false'] == created['direct-true']
