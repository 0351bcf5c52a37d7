"""A node's task list filtered as pve-manager PVE/API2/Tasks.pm node_tasks filters it: `typefilter` (the task type),
`since` and `until` (its start time, UNIX epoch), `source` (finished tasks: `archive`, the default; running ones, status
`RUNNING`: `active`; or `all`), besides fakepve's `vmid`, `start` and `limit`; a user sees every task with Sys.Audit on
/nodes/NODE, else only its own."""

from fakepve.server import USER, ok, params


class TasksMixin:
    async def _task_list(self, request):
        node = request.match_info['node']
        user = request[USER]
        p = self._verify(request, await params(request))
        audit = self.allowed(user, '/nodes/' + node, 'Sys.Audit')
        vmid, kind, since, until = p.get('vmid'), p.get('typefilter'), p.get('since'), p.get('until')
        statuses = {'archive': ('stopped',), 'active': ('running',), 'all': ('stopped', 'running')}[p.get('source') or 'archive']
        data = [
            self._task_view(task, True) | ({'status': 'RUNNING'} if task['status'] == 'running' else {})
            for task in self.tasklog
            if task['node'] == node
            and (audit or self._task_owner(user, task))
            and (vmid is None or task['id'] == str(vmid))
            and (not kind or task['type'] == kind)
            and task['status'] in statuses
            and (since is None or task['starttime'] >= int(since))
            and (until is None or task['starttime'] <= int(until))
        ]
        data.sort(key=lambda task: -task['starttime'])
        start = p.get('start', 0)
        return ok(data[start : start + p.get('limit', 50)])
