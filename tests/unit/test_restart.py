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


def task(kind, start, end=None, status='OK', vmid=105):
    return {'type': kind, 'id': str(vmid), 'starttime': start, 'endtime': end if end is not None else start + 5, 'status': status}


RECORDED = 1_764_590_000


def test_a_start_or_a_reboot_after_the_record_is_a_restart():
    assert _restart.restarted([task('qmstop', RECORDED + 100), task('qmstart', RECORDED + 110)], 105, RECORDED)
    assert _restart.restarted([task('qmreboot', RECORDED + 100, RECORDED + 140), task('qmstart', RECORDED + 130)], 105, RECORDED)
    # vzdump's stop mode starts the VM again with `qm start` too: a restart.
    assert _restart.restarted([task('vzdump', RECORDED + 100, RECORDED + 900), task('qmstart', RECORDED + 800)], 105, RECORDED)


def test_the_start_a_live_migration_makes_on_its_target_is_no_restart():
    # QemuMigrate.pm phase2: `qm start --migratedfrom` runs inside the qmigrate task (on the source node).
    migration = [task('qmigrate', RECORDED + 100, RECORDED + 160), task('qmstart', RECORDED + 120)]
    assert not _restart.restarted(migration, 105, RECORDED)
    # A restart after the migration is one; one before it stays one (the migration carries the new boot over).
    assert _restart.restarted([*migration, task('qmstart', RECORDED + 300)], 105, RECORDED)
    assert _restart.restarted([task('qmstart', RECORDED + 50), *migration], 105, RECORDED)


def test_a_resume_after_hibernation_is_no_restart_and_the_start_after_it_is():
    hibernation = [task('qmsuspend', RECORDED + 100), task('qmstart', RECORDED + 200)]
    assert not _restart.restarted(hibernation, 105, RECORDED)
    assert _restart.restarted([*hibernation, task('qmstop', RECORDED + 300), task('qmstart', RECORDED + 310)], 105, RECORDED)


def test_failed_tasks_other_vms_tasks_and_those_before_the_record_count_for_nothing():
    assert not _restart.restarted([task('qmstart', RECORDED + 100, status="start failed: QEMU exited with code 1")], 105, RECORDED)
    assert _restart.restarted([task('qmstart', RECORDED + 100, status='WARNINGS: 1')], 105, RECORDED)
    assert not _restart.restarted([task('qmstart', RECORDED + 100, vmid=106)], 105, RECORDED)
    assert not _restart.restarted([task('qmstart', RECORDED - 2)], 105, RECORDED)
    assert not _restart.restarted([], 105, RECORDED)
