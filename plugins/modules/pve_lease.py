#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: pve_lease
short_description: A lease on work that two runs could collide on, held in Proxmox VE
version_added: 0.1.0
description:
  - >-
    Takes, renews or releases a lease on a piece of work (a template's build, a VM's creation, a replace, a prune),
    so that two runs of the same inventory at once never do the same work or undo each other's.
  - >-
    The leases are one line C([puls-leases: KEY=RUN@CONTROLLER:EXPIRY,...]) in the notes of the lowest-named online
    node of the cluster (C(description) of C(/nodes/{node}/config)); every other character of those notes stays as it
    is. Each write carries the config digest of its read; when another writer came in between, Proxmox VE refuses it
    and the module reads and decides again, so two runs never both take one lease. A node config that is empty reads
    back without a digest, and Proxmox VE checks none on a write to it; the module then first writes the node option
    C(startall-onboot-delay: 0) (its default) alone, and reads and decides again with the digest that gives
    (docs/concurrency.md).
  - >-
    O(state=acquired) takes the lease for O(run_id) until O(ttl) seconds from now, or renews it when O(run_id) already
    holds it. A lease another run holds and that has not expired is not taken: the result says who holds it
    (RV(held_by)) and the task does not fail. With O(wait), the module waits for it first, looking again every
    O(wait_delay) seconds; meanwhile its action plugin shows a progress line naming the lease, the run that holds it
    and the time elapsed (C(pve_progress), as for the other modules' waits). An expired lease is taken over
    (RV(taken_over) names the run that held it).
  - O(state=released) drops the lease when O(run_id) holds it; another run's lease is never dropped.
  - O(keys) takes or releases several leases together, all or none (see O(keys)).
  - >-
    The expiry is read on the controller's clock: the controllers of runs that may overlap must keep their clocks in
    agreement (NTP) to well within O(ttl).
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - puls.proxmox.attributes
  - puls.proxmox.connection
  - puls.proxmox.connection.action_group
attributes:
  check_mode:
    support: full
    details: >-
      Writes nothing. It reports whether the lease would be taken (RV(acquired)) or, when another run holds it,
      who does (RV(held_by)).
  diff_mode:
    support: full
    details: Shows the lease's entry before and after.
options:
  key:
    description:
      - The work the lease is on. V(template/NAME) (the build of template NAME), V(vm/NAME) (the creation and
        provisioning of VM NAME), V(replace/NAME) (the destruction of NAME by its successor) or V(prune).
      - NAME has letters, digits, C(.), C(_) or C(-), at most 64.
      - One of O(key) and O(keys) is required.
    type: str
  keys:
    description:
      - Several leases, each as O(key) names one, taken, renewed or released together in one write of the record.
      - >-
        They are taken all at once or not at all: while another live run holds one of them, this run takes none and
        the result names that lease's holder (RV(held_by)). A run so never holds part of what it waits for, and two
        runs asking for overlapping sets cannot each hold what the other waits for.
      - The role takes the leases of every machine a run creates or converges this way, in one task.
    type: list
    elements: str
  run_id:
    description:
      - The run that holds the lease, one for the whole C(ansible-playbook) run (the role uses C(pve_run_id)).
      - Letters, digits, C(.), C(_) or C(-), at most 64.
    type: str
    required: true
  state:
    description:
      - V(acquired) takes or renews the lease; V(released) drops it.
    type: str
    choices: [acquired, released]
    default: acquired
  ttl:
    description:
      - Seconds the lease lasts from now, with O(state=acquired). Renew it before it expires while the work goes on.
    type: int
    default: 900
  wait:
    description:
      - Seconds to wait, with O(state=acquired), while another live run holds the lease; V(0) answers at once.
      - Out of time, the result is as without waiting (RV(acquired) false, RV(held_by) the run that holds it).
      - In check mode it waits too (reading only), so that the answer is the one the real run would get.
    type: int
    default: 0
  wait_delay:
    description:
      - Seconds between two looks at the lease while waiting (O(wait)).
    type: int
    default: 10
notes:
  - Reading the leases needs C(Sys.Audit) on C(/); writing them needs C(Sys.Modify) on C(/), checked before the write
    (pve-manager C(PVE/API2/NodeConfig.pm)).
  - When the lowest-named online node changes (it goes offline, or a node with a lower name joins), the leases
    held in the old node's notes are not seen until it is back; see the collection's docs/concurrency.md.
seealso:
  - name: Proxmox VE API, node config
    description: The C(description) and C(digest) of C(PUT /nodes/{node}/config).
    link: https://pve.proxmox.com/pve-docs/api-viewer/#/nodes/{node}/config
'''

EXAMPLES = r'''
- name: Take the lease on the build of web-golden, waiting up to 10 minutes while another run holds it
  puls.proxmox.pve_lease:
    key: template/web-golden
    run_id: "{{ run_id }}"
    ttl: 900
    wait: 600
    wait_delay: 10
  delegate_to: localhost
  register: lease
  failed_when: not lease.acquired

- name: Ask, without taking it, whether another run holds the lease on web1's creation
  puls.proxmox.pve_lease:
    key: vm/web1
    run_id: "{{ run_id }}"
  check_mode: true
  delegate_to: localhost
  register: web1_lease

- name: Take the leases on the creation of web1 and web2 together, both or neither
  puls.proxmox.pve_lease:
    keys: [vm/web1, vm/web2]
    run_id: "{{ run_id }}"
    wait: 600
  delegate_to: localhost
  register: vm_leases
  failed_when: not vm_leases.acquired

- name: Release them together
  puls.proxmox.pve_lease:
    keys: [vm/web1, vm/web2]
    run_id: "{{ run_id }}"
    state: released
  delegate_to: localhost

- name: Release the lease
  puls.proxmox.pve_lease:
    key: template/web-golden
    run_id: "{{ run_id }}"
    state: released
  delegate_to: localhost
'''

RETURN = r'''
key:
  description: The work the lease is on, as given.
  returned: success, with O(key)
  type: str
  sample: template/web-golden
lease_keys:
  description: >-
    The works the leases are on, as given in O(keys) (each once, in the order given). Not named C(keys), which a
    Jinja expression such as C(result.keys) would read as the dictionary's method.
  returned: success, with O(keys)
  type: list
  elements: str
  sample: [vm/web1, vm/web2]
node:
  description: The node whose notes hold the leases.
  returned: success
  type: str
  sample: pve1
run_id:
  description: The run, as given.
  returned: success
  type: str
  sample: 3f2a9c1b7d4e
controller:
  description: This controller's host name, as the lease names it.
  returned: success
  type: str
  sample: awx-1
acquired:
  description: >-
    Whether O(run_id) holds the lease now (in check mode, would hold it); with O(keys), all of them. Always false with
    O(state=released).
  returned: success
  type: bool
  sample: true
expires:
  description: Unix seconds when O(run_id)'s lease expires (with O(keys), the first one's); null when it holds none.
  returned: success
  type: int
  sample: 1764621234
held_by:
  description: The other run that holds the lease and keeps it from O(run_id) (with O(keys), the first such), or null.
  returned: success
  type: dict
  sample: {key: template/web-golden, run_id: 0c1d2e3f4a5b, controller: laptop, expires: 1764621234, expires_in: 412}
  contains:
    key:
      description: The lease it holds.
      type: str
    run_id:
      description: Its run id.
      type: str
    controller:
      description: Its controller's host name.
      type: str
    expires:
      description: Unix seconds when its lease expires.
      type: int
    expires_in:
      description: Seconds from now until then (negative once expired).
      type: int
taken_over:
  description: >-
    The run whose expired lease O(run_id) took over (a run that ended without releasing it; with O(keys), the first
    such), as RV(held_by) describes a holder, or null.
  returned: success
  type: dict
  sample: {key: template/web-golden, run_id: 0c1d2e3f4a5b, controller: laptop, expires: 1764620034, expires_in: -788}
waited:
  description: Seconds the module waited for the lease (O(wait)); 0 when it did not wait.
  returned: success
  type: int
  sample: 42
others:
  description: Every live lease other runs hold, by key, each as RV(held_by) describes it.
  returned: success
  type: dict
  sample: {vm/web2: {run_id: 0c1d2e3f4a5b, controller: laptop, expires: 1764621234, expires_in: 412}}
'''

from ansible_collections.puls.proxmox.plugins.module_utils._lease_io import ARGUMENT_SPEC, MUTUALLY_EXCLUSIVE, REQUIRED_ONE_OF, LeaseRequest, reconcile
from ansible_collections.puls.proxmox.plugins.module_utils._module import PveModule


def main():
    module = PveModule(argument_spec=ARGUMENT_SPEC, mutually_exclusive=MUTUALLY_EXCLUSIVE, required_one_of=REQUIRED_ONE_OF)
    try:
        request = LeaseRequest.from_params(module.params)
    except ValueError as exc:
        module.fail(str(exc))
    module.run(reconcile, module.client, request, check_mode=module.check_mode)


if __name__ == '__main__':
    main()
