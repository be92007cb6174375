#!/usr/bin/env bash
# Runs a command on a real cgroup-v2 kernel: Debian's user-mode-linux (a Linux 6.1 kernel run as a
# process, no KVM needed) boots with this machine's filesystem as its root (hostfs), mounts proc,
# sys, cgroup2 (cpu, io, memory, pids), tmpfs on /run, /tmp and /dev/shm, brings up the loopback,
# and runs the command as root in the current directory. Its output and exit status come back
# through the shared filesystem; this script prints the output and exits with that status.
#
#   scripts/uml/run.sh node scripts/test.mjs test/security/cgroup-v2
#
# Needs root (hostfs writes as the caller) and `linux.uml` (apt-get install user-mode-linux).
# UML_MEM (default 2048M) sizes its memory; UML_TIMEOUT (default 600) bounds the run in seconds.
set -euo pipefail
if ! command -v linux.uml >/dev/null; then
  echo "scripts/uml/run.sh: linux.uml is missing (apt-get install user-mode-linux)" >&2
  exit 2
fi
[ $# -gt 0 ] || { echo "usage: scripts/uml/run.sh COMMAND [ARG...]" >&2; exit 2; }

work=$(mktemp -d /var/tmp/berth-uml-XXXXXX)
trap 'rm -rf "$work"' EXIT
printf '%q ' "$@" > "$work/command"
# What the command sees of this shell: its directory, PATH, and the variables that steer the tests.
{
  printf 'cd %q\n' "$PWD"
  printf 'export PATH=%q HOME=/root LANG=C.UTF-8\n' "$PATH"
  for v in BERTH_TEST BERTH_TEST_STORE BERTH_TEST_BUILD BERTH_TEST_RUN CI; do
    [ -n "${!v:-}" ] && printf 'export %s=%q\n' "$v" "${!v}"
  done
} > "$work/env"

cat > "$work/init" <<'INIT'
#!/bin/sh
# PID 1 of the UML kernel.
work=$(dirname "$0")
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p /dev/shm /dev/pts && mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t devpts devpts /dev/pts 2>/dev/null
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
# overlayfs (a job's layer over an image, agent/sandbox.ts) is a module in Debian's UML kernel,
# loaded with busybox-static's insmod (kmod is not on every machine; .ci/run installs busybox).
busybox insmod "/usr/lib/uml/modules/$(uname -r)/kernel/fs/overlayfs/overlay.ko" 2>/dev/null
hostname uml
. "$work/env"
echo "== on $(uname -sr), cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)" > "$work/output"
sh -c "$(cat "$work/command")" >> "$work/output" 2>&1 </dev/null
echo $? > "$work/status"
sync
poweroff -f 2>/dev/null || halt -f
INIT
chmod +x "$work/init"

timeout "${UML_TIMEOUT:-600}" linux.uml "mem=${UML_MEM:-2048M}" root=/dev/root rootfstype=hostfs rootflags=/ rw \
  "init=$work/init" con=null con0=null,fd:2 </dev/null >/dev/null 2>"$work/console" || true
if [ ! -f "$work/status" ]; then
  echo "scripts/uml/run.sh: the UML kernel ended without the command's status; its console:" >&2
  tail -n 30 "$work/console" >&2
  [ -f "$work/output" ] && cat "$work/output"
  exit 1
fi
cat "$work/output"
exit "$(cat "$work/status")"
