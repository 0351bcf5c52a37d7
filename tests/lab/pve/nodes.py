"""Node memory per node (fakepve gives every node the same figures), so placement by free memory is
deterministic: the node list, /cluster/resources and /nodes/{node}/status agree."""

import json

from fakepve.server import ok

MIB = 1024**2


class NodesMixin:
    def node_memory_usage(self, node):
        """(used, total) bytes: the node's own use plus the memory of its running VMs."""
        total, base = self.node_memory.get(node, (8 * 1024 * MIB, 2 * 1024 * MIB))
        guests = sum(int(str(vm.config.get('memory', 512)).rsplit('=', maxsplit=1)[-1]) * MIB for vm in self.vms if vm.node == node and vm.status == 'running')
        return base + guests, total

    def _with_node_memory(self, response):
        if response.status != 200:
            return response
        data = json.loads(response.body)['data']
        for item in data:
            if item.get('type') == 'node' and item.get('status') == 'online':
                item['mem'], item['maxmem'] = self.node_memory_usage(item['node'])
        return ok(data)

    async def _nodes(self, request):
        return self._with_node_memory(await super()._nodes(request))

    async def _resources(self, request):
        return self._with_node_memory(await super()._resources(request))

    def _routes_lab_nodes(self):
        return [('GET', '/nodes/{node}/status', self._lab_node_status)]

    async def _lab_node_status(self, v, user):
        used, total = self.node_memory_usage(v['node'])
        memory = {'total': total, 'used': used, 'free': total - used, 'available': total - used}
        return self._complete('/nodes/{node}/status', {'memory': memory}, node=v['node'])
