"""A node's task list as pve-manager PVE/API2/Tasks.pm node_tasks gives it: `typefilter` (the task type), `since` and
`until` (its start time, UNIX epoch), besides fakepve's `vmid`, `start` and `limit`; a user sees every task with
Sys.Audit on /nodes/NODE, else only its own.

`source` (node_tasks: `archive` by default, `active`, `all`): the archive is the node's task index
(/var/log/pve/tasks/index), where pve-common PVE/RESTEnvironment.pm active_workers moves a task only once it has ended
and active_workers runs again on that node: when the node's next task starts (fork_worker calls it) or on pvestatd's
next cycle (pve-manager PVE/Service/pvestatd.pm update_status, every 10 s; here 10 s after the task ended, at the
latest). Until then the task is in the node's active list, which node_tasks lists with the status `RUNNING` and no
`endtime`, ended or not (only active_workers writes an ended task's end time and status, when it archives it:
pve-common src/PVE/INotify.pm read_active_workers gives an entry not yet archived neither).
"""

import time

from fakepve.server import USER, ok, params

# pvestatd.pm: $updatetime, the seconds between two update_status.
PVESTATD_CYCLE = 10


class TasksMixin:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The UPIDs in a node's task index.
        self.tasks_archived = set()

    async def task(self, node, ttype, tid, user, body, vm=None, lock=True, log=()):
        """fork_worker runs active_workers first: the node's ended tasks go to its index."""
        self.archive_ended_tasks(node)
        return await super().task(node, ttype, tid, user, body, vm=vm, lock=lock, log=log)

    def archive_ended_tasks(self, node=None):
        """active_workers on node (None: every node, as pvestatd's next cycle runs it): its ended tasks go to its index."""
        self.tasks_archived.update(task['upid'] for task in self.tasklog if node in (None, task['node']) and task['status'] == 'stopped')

    def _archived(self, task):
        if task['upid'] in self.tasks_archived:
            return True
        return task['status'] == 'stopped' and time.time() - task['endtime'] >= PVESTATD_CYCLE

    def _unarchived_view(self, task):
        """A task of the active list not yet archived, as node_tasks lists it: `RUNNING`, without an end time."""
        view = dict(self._task_view(task, True), status='RUNNING')
        view.pop('endtime', None)
        return view

    async def _task_list(self, request):
        node = request.match_info['node']
        user = request[USER]
        p = self._verify(request, await params(request))
        audit = self.allowed(user, '/nodes/' + node, 'Sys.Audit')
        vmid, kind, since, until, source = p.get('vmid'), p.get('typefilter'), p.get('since'), p.get('until'), p.get('source', 'archive')
        listed = [
            task
            for task in self.tasklog
            if task['node'] == node
            and (audit or self._task_owner(user, task))
            and (vmid is None or task['id'] == str(vmid))
            and (not kind or task['type'] == kind)
            and (since is None or task['starttime'] >= int(since))
            and (until is None or task['starttime'] <= int(until))
        ]
        listed.sort(key=lambda task: -task['starttime'])
        active = [self._unarchived_view(task) for task in listed if not self._archived(task)]
        archive = [self._task_view(task, True) for task in listed if self._archived(task)]
        data = {'archive': archive, 'active': active, 'all': active + archive}[source]
        start = p.get('start', 0)
        return ok(data[start : start + p.get('limit', 50)])
