"""Commands a lab guest puts first on PATH: cloud-init (status reads the result the lab writes at the end of
the guest's boot) and sudo (one user in the guest, so Ansible's become runs the command as it)."""

import os

CLOUD_INIT = r'''#!/bin/sh
# cloud-init in a lab guest: "status" reads {state}/result, written by the lab when the boot is done.
state='{state}'
command="$1"
[ $# -gt 0 ] && shift
case "$command" in
status)
    wait=; long=
    for arg in "$@"; do
        case "$arg" in --wait|-w) wait=1 ;; --long|-l) long=1 ;; esac
    done
    if [ -n "$wait" ] && [ ! -s "$state/result" ]; then
        while [ ! -s "$state/result" ]; do printf .; sleep 0.1; done
        echo
    fi
    result=$(cat "$state/result" 2>/dev/null)
    echo "status: ${{result:-running}}"
    if [ -n "$long" ]; then
        echo "extended_status: ${{result:-running}}"
        echo "boot_status_code: enabled-by-generator"
        echo "detail: DataSourceNoCloud [seed=/dev/sr0]"
        if [ "$result" = error ]; then
            echo "errors:"
            echo "	- lab: this guest's cloud-init is set to fail"
        else
            echo "errors: []"
        fi
    fi
    [ "$result" = error ] && exit 1
    exit 0 ;;
clean)
    echo "$*" >> "$state/clean.log"
    exit 0 ;;
*)
    echo "cloud-init (lab guest): unsupported command: $command" >&2
    exit 2 ;;
esac
'''

SUDO = r'''#!/bin/sh
# sudo in a lab guest: its one user runs the command itself (sudo -H -S -n -u root -E -- command ...).
while [ $# -gt 0 ]; do
    case "$1" in
        --) shift; break ;;
        -u|-g|-p|-C|-D|-h|-r|-t|-U) shift 2 ;;
        -?*) shift ;;
        *) break ;;
    esac
done
if [ $# -eq 0 ]; then
    echo "usage: sudo [-H] [-S] [-n] [-E] [-u user] [--] command" >&2
    exit 1
fi
exec "$@"
'''


def install(bindir, state):
    """Write the shims into bindir; state is the guest's cloud-init state directory."""
    os.makedirs(bindir, exist_ok=True)
    for name, text in (('cloud-init', CLOUD_INIT.format(state=state)), ('sudo', SUDO)):
        path = os.path.join(bindir, name)
        with open(path, 'w') as out:
            out.write(text)
        os.chmod(path, 0o755)
