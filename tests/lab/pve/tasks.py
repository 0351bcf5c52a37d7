"""A node's task list as pve-manager PVE/API2/Tasks.pm node_tasks gives it: `typefilter` (the task type), `since` and
`until` (its start time, UNIX epoch), besides fakepve's `vmid`, `start` and `limit`; a user sees every task with
Sys.Audit on /nodes/NODE, else only its own.

`source` (node_tasks: `archive` by default, `active`, `all`): the archive is the node's task index
(/var/log/pve/tasks/index), the active list holds the tasks not yet archived, which node_tasks lists with the status
`RUNNING` and no `endtime` (pve-common src/PVE/INotify.pm read_active_workers: an entry not yet archived has
neither). A task is archived as it ends: the process that forked the worker reaps it and runs active_workers (pve-common
src/PVE/RESTEnvironment.pm worker_reaper and log_task_result for a daemon's worker, fork_worker after waitpid for a
command line's), which writes the ended task's end time and status into the index; pvestatd's cycle (pve-manager
PVE/Service/pvestatd.pm update_status) does it only for a worker whose parent is gone ("in case of an unexpected
crash").
"""

from fakepve.server import USER, ok, params


class TasksMixin:
    @staticmethod
    def _archived(task):
        return task['status'] == 'stopped'

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
        active = [dict(self._task_view(task, True), status='RUNNING') for task in listed if not self._archived(task)]
        archive = [self._task_view(task, True) for task in listed if self._archived(task)]
        data = {'archive': archive, 'active': active, 'all': active + archive}[source]
        start = p.get('start', 0)
        return ok(data[start : start + p.get('limit', 50)])
