"""A node's task list (lab/pve/tasks.py): pve-manager PVE/API2/Tasks.pm node_tasks, with the active list and the index
that pve-common PVE/RESTEnvironment.pm and PVE/INotify.pm keep."""

import pytest

TASKS = '/nodes/pve1/tasks'


@pytest.mark.lab(time_scale=0.01)
def test_a_running_task_is_listed_active_and_archived_as_it_ends(lab, api):
    api.clone(134)
    lab.call(lambda: setattr(lab.pve.vm(134), 'start_secs', 100))
    upid = api.data('POST', '/nodes/pve1/qemu/134/status/start')
    # node_tasks: the active list's entry not yet archived, RUNNING and without an end (INotify.pm read_active_workers).
    running = api.data('GET', TASKS, vmid=134, typefilter='qmstart', source='active')
    assert [(task['upid'], task['status']) for task in running] == [(upid, 'RUNNING')] and 'endtime' not in running[0]
    assert api.data('GET', TASKS, vmid=134, typefilter='qmstart') == [], 'the default source lists archived tasks only'
    assert api.wait(upid)['exitstatus'] == 'OK'
    # Its parent reaps it and archives it at once (RESTEnvironment.pm worker_reaper, log_task_result, active_workers).
    archived = api.data('GET', TASKS, vmid=134, typefilter='qmstart')
    assert [(task['upid'], task['status']) for task in archived] == [(upid, 'OK')] and archived[0]['endtime'] >= archived[0]['starttime']
    assert api.data('GET', TASKS, vmid=134, typefilter='qmstart', source='active') == []
    assert [task['upid'] for task in api.data('GET', TASKS, vmid=134, typefilter='qmstart', source='all')] == [upid]


def test_the_list_filters_by_type_start_time_and_vm(lab, api):
    api.clone(135)
    api.run('POST', '/nodes/pve1/qemu/135/status/start')
    api.run('POST', '/nodes/pve1/qemu/135/status/stop')
    # A clone's task is its source's (Qemu.pm clone_vm forks qmclone for the source VMID).
    assert sorted(task['type'] for task in api.data('GET', TASKS, vmid=135)) == ['qmstart', 'qmstop']
    start = api.data('GET', TASKS, vmid=135, typefilter='qmstart')[0]
    assert api.data('GET', TASKS, vmid=135, since=start['starttime'] + 1) == []
    assert [task['type'] for task in api.data('GET', TASKS, vmid=135, since=start['starttime'], typefilter='qmstart')] == ['qmstart']
