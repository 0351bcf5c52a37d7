# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What awaits a restart that PVE reports nowhere: the restart record in a running VM's Notes (_restart), and the plan
that writes, reads and drops it. PVE applies a changed ipconfigN to the config at once (running config included)
and GET .../cloudinit never lists it, so only the record says the guest still runs with its old address."""

from __future__ import annotations

from test_plan import CONVERGED, Observed, kinds, plan_vm, spec

from ansible_collections.puls.proxmox.plugins.module_utils import _restart
from ansible_collections.puls.proxmox.plugins.module_utils._vm_plan import CONFIGURE, SHUTDOWN, START

BOOT = 1_764_590_000
NEW_IP = 'ip=127.0.0.6/24,gw=127.0.0.1'


def running(config, started=BOOT):
    # PVE applies cloud-init keys at once: the running config (current=1) shows the new value too.
    return Observed(100, 'pve1', 'running', config, current=config, started=started)


def after_report_run():
    """The config of VM 100 after a report-mode run changed its address: the new ipconfig0 and the record."""
    plan = plan_vm(spec(ip='127.0.0.6'), running(CONVERGED))
    written = plan.actions[0].params['set']
    return {**CONVERGED, **written}, plan


def test_a_changed_address_of_a_running_vm_is_recorded_in_the_same_config_write():
    config, plan = after_report_run()
    assert kinds(plan) == [CONFIGURE] and plan.reboot_required == ('ipconfig0',)
    record = _restart.read_record(config['description'])
    assert (record.vmid, record.started) == (100, BOOT)
    assert record.values == {'ipconfig0': _restart.value_hash(CONVERGED['ipconfig0'])}
    # The human notes and the owner record stay.
    assert config['description'].startswith('[puls-owner: puls-managed=100]\n')
    # Not part of the diff: the record is the module's bookkeeping, not a declared field.
    assert 'description' not in plan.diff['after']


def test_the_next_run_still_reports_the_address_as_awaiting_a_restart_and_writes_nothing():
    config, _plan = after_report_run()
    plan = plan_vm(spec(ip='127.0.0.6'), running(config, started=BOOT + 5))  # the same boot, read a little later
    assert not plan.changed and plan.actions == ()
    assert plan.reboot_required == ('ipconfig0',)


def test_after_a_restart_nothing_awaits_and_the_record_costs_no_write():
    config, _plan = after_report_run()
    plan = plan_vm(spec(ip='127.0.0.6'), running(config, started=BOOT + 3600))
    assert plan.actions == () and plan.reboot_required == ()


def test_an_address_set_back_to_the_booted_one_awaits_nothing_and_drops_the_record():
    config, _plan = after_report_run()
    plan = plan_vm(spec(ip='127.0.0.5'), running(config, started=BOOT + 5))
    assert plan.reboot_required == ()
    assert plan.actions[0].params['set'] == {'ipconfig0': CONVERGED['ipconfig0'], 'description': '[puls-owner: puls-managed=100]'}


def test_a_second_change_keeps_the_value_the_guest_booted_with():
    config, _plan = after_report_run()
    plan = plan_vm(spec(ip='127.0.0.7'), running(config, started=BOOT + 5))
    record = _restart.read_record(plan.actions[0].params['set']['description'])
    assert record.values == {'ipconfig0': _restart.value_hash(CONVERGED['ipconfig0'])}
    assert plan.reboot_required == ('ipconfig0',)


def test_reboot_mode_restarts_and_then_drops_the_record():
    config, _plan = after_report_run()
    plan = plan_vm(spec(ip='127.0.0.6', apply_mode='reboot'), running(config, started=BOOT + 5))
    assert kinds(plan) == [SHUTDOWN, START, CONFIGURE]
    assert plan.actions[-1].params == {'set': {'description': '[puls-owner: puls-managed=100]'}, 'delete': []}
    assert plan.reboot_required == ()


def test_a_record_copied_into_a_clone_names_another_vmid_and_counts_for_nothing():
    config, _plan = after_report_run()
    clone = Observed(
        101,
        'pve1',
        'running',
        {**config, 'description': config['description'].replace('puls-owner: puls-managed=100', 'puls-owner: puls-managed=101')},
        started=BOOT + 5,
    )
    assert _restart.awaiting(clone.config['description'], clone.config, 101, BOOT + 5, True) == frozenset()


def test_a_stopped_vm_awaits_nothing_whatever_its_record_says():
    config, _plan = after_report_run()
    assert _restart.awaiting(config['description'], config, 100, None, running=False) == frozenset()


def test_a_start_within_the_tolerance_is_the_same_boot_and_an_unknown_start_never_ends_the_record():
    record = _restart.RestartRecord(100, BOOT, {'ipconfig0': '0'})
    assert record.same_boot(100, BOOT + _restart.START_TOLERANCE)
    assert not record.same_boot(100, BOOT + _restart.START_TOLERANCE + 1)
    assert record.same_boot(100, None)
    assert not record.same_boot(101, BOOT)


def test_only_keys_pve_lists_nowhere_are_recorded():
    assert _restart.unreported(['ipconfig1', 'sshkeys', 'ipconfig0', 'cores', 'ciuser']) == ['ipconfig0', 'ipconfig1']


def test_the_record_renders_into_notes_and_leaves_every_other_line():
    notes = 'Owned by team A\n\n[puls-provision: site.yml=abc123]'
    written = _restart.with_record(notes, {'ipconfig0': 'ip=dhcp'}, {'ipconfig0': NEW_IP}, 100, BOOT, ['ipconfig0'])
    assert written.startswith(notes)
    assert _restart.read_record(written) == _restart.RestartRecord(100, BOOT, {'ipconfig0': _restart.value_hash('ip=dhcp')})
    assert _restart.without_record(written) == notes


def test_a_key_the_guest_booted_without_is_recorded_as_absent():
    written = _restart.with_record('', {}, {'ipconfig1': NEW_IP}, 100, BOOT, ['ipconfig1'])
    assert _restart.read_record(written).values == {'ipconfig1': '0'}
    assert _restart.awaiting(written, {'ipconfig1': NEW_IP}, 100, BOOT, True) == frozenset({'ipconfig1'})
    assert _restart.awaiting(written, {}, 100, BOOT, True) == frozenset()


def task(kind, start, status='OK', vmid=105, user='root@pam'):
    return {'type': kind, 'id': str(vmid), 'starttime': start, 'endtime': start + 5, 'status': status, 'user': user, 'upid': f'{kind}:{start}'}


RECORDED = 1_764_590_000
# What qemu-server PVE/QemuServer.pm vm_start_nolock prints: the start of a boot, a live migration's start on its
# target (`qm start --migratedfrom`, the unix socket of a secure migration), a resume after hibernation.
BOOT_LOG = ['generating cloud-init ISO', 'TASK OK']
MIGRATION_LOG = ['migration listens on unix:/run/qemu-server/105.migrate', 'TASK OK']
RESUME_LOG = ['Resumed VM, removing state', 'TASK OK']


def restarted(tasks, logs=None, since=RECORDED):
    """_restart.restarted with each task's log from logs (by UPID; BOOT_LOG else); and the UPIDs whose log it read."""
    read = []

    def log_of(item):
        read.append(item['upid'])
        return (logs or {}).get(item['upid'], BOOT_LOG)

    return _restart.restarted(tasks, 105, since, log_of), read


def test_a_start_or_a_reboot_after_the_record_is_a_restart():
    assert restarted([task('qmstop', RECORDED + 100), task('qmstart', RECORDED + 110)]) == (True, ['qmstart:1764590110'])
    # A reboot needs no log.
    assert restarted([task('qmreboot', RECORDED + 100), task('qmstart', RECORDED + 130)]) == (True, [])
    # An HA start is the LRM's qmstart of root@pam (its log: "task started by HA resource agent").
    assert restarted([task('hastart', RECORDED + 100, user='ci@pve'), task('qmstart', RECORDED + 101)])[0]


def test_the_start_a_live_migration_makes_on_its_target_is_no_restart_whatever_the_source_node_lists():
    migration = task('qmstart', RECORDED + 120)
    # The qmigrate task on the source node is not needed: that node may be down (evacuated for maintenance), or the
    # migration may have begun before the record's boot plus the tolerance.
    assert restarted([migration], {migration['upid']: MIGRATION_LOG}) == (False, [migration['upid']])
    assert not restarted([task('qmigrate', RECORDED + 30), migration], {migration['upid']: MIGRATION_LOG})[0]
    # A start after the migration is a restart, found from the latest start on; one before it stays one.
    later = task('qmstart', RECORDED + 300)
    assert restarted([migration, later], {migration['upid']: MIGRATION_LOG}) == (True, [later['upid']])
    assert restarted([task('qmstart', RECORDED + 50), migration], {migration['upid']: MIGRATION_LOG})[0]
    # A storage migration's line alone (`storage migration listens on nbd:...`) is no incoming migration of the VM.
    assert restarted([migration], {migration['upid']: ['storage migration listens on nbd:unix:/run/qemu-server/105_nbd.migrate']})[0]


def test_a_resume_after_hibernation_is_no_restart_and_the_start_after_it_is():
    resume = task('qmstart', RECORDED + 200)
    hibernation = [task('qmsuspend', RECORDED + 100), resume]
    assert not restarted(hibernation, {resume['upid']: RESUME_LOG})[0]
    # A resume through the resume endpoint is a qmresume task (vm_resume starts a hibernated VM): never a boot.
    assert not restarted([task('qmsuspend', RECORDED + 100), task('qmresume', RECORDED + 200)])[0]
    # After either resume, a stop and a start boot the guest.
    after = [task('qmstop', RECORDED + 300), task('qmstart', RECORDED + 310)]
    assert restarted([*hibernation, *after], {resume['upid']: RESUME_LOG})[0]
    assert restarted([task('qmsuspend', RECORDED + 100), task('qmresume', RECORDED + 200), *after])[0]


def test_failed_tasks_other_vms_tasks_and_those_before_the_record_count_for_nothing():
    assert restarted([task('qmstart', RECORDED + 100, status="start failed: QEMU exited with code 1")]) == (False, [])
    # A task not yet archived is listed RUNNING (pve-manager PVE/API2/Tasks.pm node_tasks), ended or not.
    assert restarted([task('qmstart', RECORDED + 100, status='RUNNING')]) == (False, [])
    assert restarted([task('qmstart', RECORDED + 100, status='WARNINGS: 1')])[0]
    assert restarted([task('qmstart', RECORDED + 100, vmid=106)]) == (False, [])
    assert restarted([task('qmstart', RECORDED - 2)]) == (False, [])
    assert restarted([]) == (False, [])
