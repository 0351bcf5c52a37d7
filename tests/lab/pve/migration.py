"""A VM's migration as qemu-server runs it (PVE/API2/Qemu.pm migrate_vm, PVE/QemuMigrate.pm), as HA or an admin
starts it (pve.migrate: fakepve's scenario, which only moves the VM after a while).

The `qmigrate` task runs on the source node. A running VM migrates online: QemuMigrate.pm phase2 starts it on the
target with `qm start --migratedfrom SOURCE` over SSH, a command-line worker that is a `qmstart` task of root@pam in
the target node's task list (pve-common src/PVE/RESTEnvironment.pm fork_worker registers sync workers too), and the
guest goes on running there in a new QEMU process: its `uptime` restarts (QemuServer.pm vmstatus: the age of the
process), while the guest keeps its boot, and the cloud-init drive is not regenerated (QemuServer.pm vm_start_nolock:
`if (!$migratedfrom)`). That start's log says what it is: `migration listens on unix:/run/qemu-server/VMID.migrate`
(vm_start_nolock prints it for the incoming state that only `--migratedfrom` brings; a sync worker's output goes to its
task log, RESTEnvironment.pm fork_worker). A stopped VM migrates offline: no process, no start.
"""

import time

MIGRATION_USER = 'root@pam'


class MigrationMixin:
    async def migrate(self, vmid, target, secs=20, user='root@pam'):
        """Migrate the VM to target within secs PVE seconds, online when it runs; the qmigrate task's UPID."""
        vm = self.guest(vmid)
        self.nodes.setdefault(target, {'online': True})
        source, online = vm.node, vm.status == 'running'

        async def body():
            vm.lock = 'migrate'
            try:
                await self.pause(secs / 2)
                if online:
                    await self._started_on_target(vm, target)
                await self.pause(secs / 2)
                vm.node = target
            finally:
                vm.lock = None
            return 'migration finished successfully'

        log = [f'starting migration of VM {vmid} to node {target!r}']
        # The lab's task() wrappers would boot the guest and regenerate its drive: the migration's own task does neither.
        return await super().task(source, 'qmigrate', vmid, user, body, vm=vm, log=log)

    async def _started_on_target(self, vm, target):
        """`qm start --migratedfrom`: a qmstart task on the target; a new process of the guest's running boot."""

        async def start():
            vm.guest_booted_at = getattr(vm, 'guest_booted_at', None) or vm.started_at
            vm.started_at = time.time()
            # vm_start_nolock's line for the incoming state `unix` of a secure migration (QemuServer/StateFile.pm
            # statefile_cmdline_option), which QemuMigrate.pm phase2 reads from the command's output.
            return f'migration listens on unix:/run/qemu-server/{vm.vmid}.migrate'

        await super().task(target, 'qmstart', vm.vmid, MIGRATION_USER, start, lock=False)
