#!/usr/bin/env bash
# cluster.sh -- a real Slurm cluster of several nodes on this one machine, for berth's tests and
# benchmarks: one private munged, one slurmctld and one slurmd per node (Debian's slurmd takes
# -N NODENAME, so each daemon is a separate node to Slurm), no systemd, no cgroups, no accounting.
#
# Usage: scripts/slurm/cluster.sh COMMAND
#   start [--nodes N]   install slurm-wlm + munge if missing, write the config, start the daemons
#                       and wait until all N nodes (n1..nN, default 3) are idle; progress goes
#                       to stderr, the last line on stdout is `export SLURM_CONF=...`, so
#                       `eval "$(scripts/slurm/cluster.sh start)"` works. Idempotent: a cluster
#                       already up in the directory with the same configuration is left alone; one
#                       up with another node count (or other settings) is stopped and restarted.
#   stop                stop every slurmd, then slurmctld, then munged (SIGTERM, SIGKILL after
#                       the deadline). Jobs are not cancelled; the controller's state is kept.
#   status              daemons and sinfo; exit 0 if slurmctld answers, 1 if not.
#   env                 print `export SLURM_CONF=...`.
#   conf                print the slurm.conf that start would write.
#   node-kill NAME      kill -9 node NAME's slurmd (its job steps keep running, as after a
#                       network partition, until the node comes back and the controller has
#                       them killed).
#   node-start NAME     start NAME's slurmd again and wait until the node answers.
#
# Environment (all optional):
#   BERTH_SLURM_DIR              directory for everything (default /tmp/berth-slurm)
#   BERTH_SLURM_NODES            node count for start (default 3; --nodes wins)
#   BERTH_SLURM_CTLD_PORT        slurmctld port (default 6917)
#   BERTH_SLURM_NODE_PORT_BASE   node nK's slurmd listens on BASE+K (default 6920: 6921, 6922, ...)
#   BERTH_SLURM_CPUS             CPUs per node (default 2)
#   BERTH_SLURM_MEMORY           RealMemory per node, MB (default 4000)
#   BERTH_SLURM_GPUS             GPUs per node as GRES (default 2; 0: none): stand-ins, character
#                                devices made in $BERTH_SLURM_DIR/dev (a major no driver here has),
#                                named by gres.conf; Slurm assigns them and sets CUDA_VISIBLE_DEVICES
#   BERTH_SLURM_SLURMD_TIMEOUT   SlurmdTimeout, s (default 10; see the bound in gen_conf)
#   BERTH_SLURM_MESSAGE_TIMEOUT  MessageTimeout, s (default 5; ditto)
#   BERTH_SLURM_RETURN_TO_SERVICE  ReturnToService (default 2: a DOWN node returns by itself when
#                                its slurmd registers; 0: it stays DOWN until resumed)
#   BERTH_SLURM_MIN_JOB_AGE      MinJobAge, s (default 2; see below)
#   BERTH_SLURM_DEBUG            SlurmctldDebug/SlurmdDebug (default info)
#   BERTH_SLURM_WAIT             deadline for start, node-start and stop, s (default 60)
#
# start and stop hold an exclusive flock on $BERTH_SLURM_DIR/state/cluster.lock, so that two
# processes calling start at once (test files run in parallel) run one after the other: the second
# finds the cluster up. A caller waits at most 10 * BERTH_SLURM_WAIT s (default 600) for the lock.
set -euo pipefail

PROG=${0##*/}
DIR=${BERTH_SLURM_DIR:-/tmp/berth-slurm}
case $DIR in /*) ;; *) DIR=$PWD/$DIR ;; esac
NODES=${BERTH_SLURM_NODES:-3}
CTLD_PORT=${BERTH_SLURM_CTLD_PORT:-6917}
NODE_PORT_BASE=${BERTH_SLURM_NODE_PORT_BASE:-6920}
CPUS=${BERTH_SLURM_CPUS:-2}
MEMORY=${BERTH_SLURM_MEMORY:-4000}
GPUS=${BERTH_SLURM_GPUS:-2}
SLURMD_TIMEOUT=${BERTH_SLURM_SLURMD_TIMEOUT:-10}
MESSAGE_TIMEOUT=${BERTH_SLURM_MESSAGE_TIMEOUT:-5}
RETURN_TO_SERVICE=${BERTH_SLURM_RETURN_TO_SERVICE:-2}
MIN_JOB_AGE=${BERTH_SLURM_MIN_JOB_AGE:-2}
DEBUG=${BERTH_SLURM_DEBUG:-info}
WAIT=${BERTH_SLURM_WAIT:-60}

ETC=$DIR/etc
CONF=$ETC/slurm.conf
GRES_CONF=$ETC/gres.conf
DEV=$DIR/dev
LOG=$DIR/log
RUN=$DIR/run
STATE=$DIR/state
MUNGE_DIR=$DIR/munge          # socket; 0755 so that clients can connect
MUNGE_KEYDIR=$MUNGE_DIR/key   # key and seed; 0700
MUNGE_SOCKET=$MUNGE_DIR/munge.socket.2
LOCK=$STATE/cluster.lock
# Set by with_lock for the copy of this script that runs under the lock; not for the daemons.
LOCKED=${BERTH_SLURM_LOCKED:-}
unset BERTH_SLURM_LOCKED

log() { printf '[berth-slurm] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() {
  echo "usage: $PROG start [--nodes N] | stop | status | env | conf | node-kill NAME | node-start NAME" >&2
  exit 2
}

# now: wall-clock seconds with microseconds; since T: seconds elapsed since T, one decimal
now() { printf '%s' "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# in_cluster CMD...: run a Slurm client against this cluster's configuration
in_cluster() { SLURM_CONF=$CONF "$@"; }

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# -------------------------------------------------------------------------------- install ---
ensure_installed() {
  local c missing=()
  for c in munged slurmctld slurmd sbatch srun sinfo squeue scontrol scancel; do
    command -v "$c" >/dev/null 2>&1 || missing+=("$c")
  done
  ((${#missing[@]} == 0)) && return 0
  [ "$(id -u)" = 0 ] || die "missing ${missing[*]}; install slurm-wlm and munge (apt-get) as root"
  command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
  local t0 aptlog=$DIR/apt-get.log
  t0=$(now)
  log "installing slurm-wlm and munge with apt-get (log: $aptlog) ..."
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq --no-install-recommends slurm-wlm munge >"$aptlog" 2>&1; then
    # stale or missing package lists: refresh them once and try again
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge; } \
      >>"$aptlog" 2>&1 || die "apt-get failed, see $aptlog"
  fi
  for c in munged slurmctld slurmd sbatch sinfo; do
    command -v "$c" >/dev/null 2>&1 || die "$c still missing after apt-get, see $aptlog"
  done
  log "installed $(dpkg-query -W -f='slurm-wlm ${Version}' slurm-wlm) in $(since "$t0") s"
}

# ------------------------------------------------------------------------------ processes ---
# pid_of PIDFILE COMM: print the pid in PIDFILE if that process is alive and is COMM
pid_of() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(tr -dc '0-9' <"$1")
  [ -n "$pid" ] && [ "$(ps -o comm= -p "$pid" 2>/dev/null)" = "$2" ] || return 1
  echo "$pid"
}

# stop_pids WHAT PID...: SIGTERM the pids, wait for them until the deadline, then SIGKILL
stop_pids() {
  local what=$1 pid left end
  shift
  (($# > 0)) || return 0
  log "stopping $what (pid $*)"
  kill -TERM "$@" 2>/dev/null || true
  end=$((SECONDS + WAIT))
  while :; do
    left=()
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && left+=("$pid"); done
    ((${#left[@]} == 0)) && return 0
    ((SECONDS < end)) || break
    sleep 0.1
  done
  log "$what (pid ${left[*]}) still alive after ${WAIT} s: SIGKILL"
  kill -KILL "${left[@]}" 2>/dev/null || true
}

slurmd_pidfile() { echo "$RUN/slurmd-$1.pid"; }

# conf_nodes: the node names the current slurm.conf defines
conf_nodes() {
  [ -f "$CONF" ] || return 0
  sed -n 's/^NodeName=\([^ ]*\) .*/\1/p' "$CONF"
}

# running_slurmds: "name pid" of each live slurmd of this directory (any node count)
running_slurmds() {
  local f name pid
  for f in "$RUN"/slurmd-*.pid; do
    [ -e "$f" ] || continue
    name=${f##*/slurmd-}
    name=${name%.pid}
    if pid=$(pid_of "$f" slurmd); then echo "$name $pid"; fi
  done
}

# ctld_up: slurmctld runs and answers (no ping without a process: it would retry for
# MessageTimeout seconds)
ctld_up() {
  pid_of "$RUN/slurmctld.pid" slurmctld >/dev/null \
    && in_cluster scontrol ping 2>/dev/null | grep -q 'is UP'
}

# --------------------------------------------------------------------------------- config ---
gen_conf() {
  local k nodes_expr true_bin
  true_bin=$(type -P true)
  if ((NODES == 1)); then nodes_expr=n1; else nodes_expr="n[1-$NODES]"; fi
  cat <<EOF
# Written by scripts/slurm/cluster.sh: a $NODES-node Slurm cluster on this one machine.
ClusterName=berth
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$STATE/ctld
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmctldLogFile=$LOG/slurmctld.log
# per node (%n = the node's name); each node has its own Port on its NodeName line
SlurmdSpoolDir=$STATE/%n
SlurmdPidFile=$RUN/slurmd-%n.pid
SlurmdLogFile=$LOG/slurmd-%n.log
SlurmctldDebug=$DEBUG
SlurmdDebug=$DEBUG
# No systemd and no cgroup v2 delegation here: track processes by parent pid, bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
MailProg=$true_bin
# Each node's slurmd reports the whole machine; the NodeName lines below are taken as they are
# (no node is drained for having fewer CPUs or less memory than configured).
SlurmdParameters=config_overrides
# 2 (the default): a node that was DOWN (for whatever reason) returns by itself when its slurmd
# registers again, so 'scontrol update nodename=NAME state=resume' is needed (and accepted) only
# while the node is still DOWN; on an idle node it fails with "Invalid node state specified".
# 0: a node set DOWN stays DOWN, even once its slurmd is back, until it is resumed.
ReturnToService=$RETURN_TO_SERVICE
# Throughput: with an Epilog configured, slurmd reports a job's end with EPILOG_COMPLETE, which
# runs the scheduler at once; without one, freed CPUs wait for the 1 s background pass.
Epilog=$true_bin
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,default_queue_depth=1000,max_rpc_cnt=150
MaxJobCount=100000
# A finished job stays visible to squeue/scontrol for MinJobAge seconds (there is no sacct).
MinJobAge=$MIN_JOB_AGE
# A dead slurmd is found by the controller's pings. A node that has not answered for
# SlurmdTimeout/3 s is pinged; a ping to a closed port is retried each second for MessageTimeout
# s before it counts as failed (the node shows '*', not responding), and the next ping cycle
# waits for that one (plus up to 2 s of bookkeeping and the controller's 1 s tick). A node is
# set DOWN ("Not responding") by the first cycle that starts once the previous one started
# SlurmdTimeout s after the node's last answer. So after a slurmd dies, the node is
#   not responding within SlurmdTimeout*2/3 + MessageTimeout + 4 s   (10, 5: 15 s)
#   DOWN           within SlurmdTimeout + 2*MessageTimeout + 5 s     (10, 5: 25 s)
# MessageTimeout is also how long any client waits for an answer: 5 s is ample on one machine.
MessageTimeout=$MESSAGE_TIMEOUT
SlurmdTimeout=$SLURMD_TIMEOUT
SlurmctldTimeout=120
InactiveLimit=0
KillWait=30
Waittime=0
PropagateResourceLimits=NONE
EOF
  local gres=''
  if ((GPUS > 0)); then
    echo "# GPUs as generic resources: stand-in device files, listed in gres.conf beside this file."
    echo 'GresTypes=gpu'
    gres=" Gres=gpu:$GPUS"
  fi
  for ((k = 1; k <= NODES; k++)); do
    printf 'NodeName=n%d NodeHostname=localhost NodeAddr=127.0.0.1 Port=%d CPUs=%d Sockets=1 CoresPerSocket=%d ThreadsPerCore=1 RealMemory=%d%s State=UNKNOWN\n' \
      "$k" $((NODE_PORT_BASE + k)) "$CPUS" "$CPUS" "$MEMORY" "$gres"
  done
  echo "PartitionName=main Nodes=$nodes_expr Default=YES MaxTime=INFINITE State=UP"
}

# make_gpus: GPUS stand-in character devices in $DEV (gpu0, gpu1, ...), with a major number no
# driver on this machine has (234-254, the range Linux keeps for local use), and gres.conf naming
# them: every node "has" the same files, which is all Slurm needs to assign and report them.
make_gpus() {
  ((GPUS > 0)) || { rm -f "$GRES_CONF"; return 0; }
  local major='' m k
  for ((m = 234; m <= 254; m++)); do
    if ! sed '/^Block devices:/,$d' /proc/devices | grep -qE "^ *$m "; then major=$m; break; fi
  done
  [ -n "$major" ] || die "no free character-device major number for the stand-in GPUs"
  mkdir -p "$DEV"
  for ((k = 0; k < GPUS; k++)); do
    [ -c "$DEV/gpu$k" ] || { rm -f "$DEV/gpu$k"; mknod -m 0666 "$DEV/gpu$k" c "$major" "$k"; } \
      || die "cannot make $DEV/gpu$k (mknod needs root)"
  done
  echo "Name=gpu File=$DEV/gpu[0-$((GPUS - 1))]" >"$GRES_CONF"
}

check_settings() {
  local v
  for v in NODES CTLD_PORT NODE_PORT_BASE CPUS MEMORY GPUS SLURMD_TIMEOUT MESSAGE_TIMEOUT \
    RETURN_TO_SERVICE MIN_JOB_AGE WAIT; do
    is_uint "${!v}" || die "$v must be a whole number, not '${!v}'"
  done
  ((NODES >= 1 && NODES <= 64)) || die "node count must be 1..64, not $NODES"
  ((NODE_PORT_BASE + NODES <= 65535 && CTLD_PORT <= 65535)) || die "ports out of range"
  ((CTLD_PORT <= NODE_PORT_BASE || CTLD_PORT > NODE_PORT_BASE + NODES)) \
    || die "slurmctld port $CTLD_PORT collides with a node port ($((NODE_PORT_BASE + 1))..$((NODE_PORT_BASE + NODES)))"
}

# ---------------------------------------------------------------------------------- munge ---
start_munge() {
  local pid
  mkdir -p "$MUNGE_KEYDIR"
  chmod 0755 "$MUNGE_DIR"
  chmod 0700 "$MUNGE_KEYDIR"
  if [ ! -s "$MUNGE_KEYDIR/munge.key" ]; then
    if command -v mungekey >/dev/null; then
      mungekey --create --keyfile="$MUNGE_KEYDIR/munge.key"
    else
      dd if=/dev/urandom of="$MUNGE_KEYDIR/munge.key" bs=1024 count=1 status=none
    fi
    chmod 0600 "$MUNGE_KEYDIR/munge.key"
    log "made a munge key"
  fi
  if pid=$(pid_of "$RUN/munged.pid" munged); then return 0; fi
  rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
  munged --key-file="$MUNGE_KEYDIR/munge.key" --socket="$MUNGE_SOCKET" \
    --pid-file="$RUN/munged.pid" --log-file="$LOG/munged.log" \
    --seed-file="$MUNGE_KEYDIR/munged.seed" --num-threads=10 \
    </dev/null >>"$LOG/munged.out" 2>&1 || die "munged did not start, see $LOG/munged.log"
  local end=$((SECONDS + WAIT))
  until [ -S "$MUNGE_SOCKET" ] && munge -S "$MUNGE_SOCKET" -n 2>/dev/null \
    | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1; do
    ((SECONDS < end)) || die "munged not answering after $WAIT s, see $LOG/munged.log"
    sleep 0.1
  done
  log "munged up (pid $(pid_of "$RUN/munged.pid" munged || echo '?'))"
}

# ---------------------------------------------------------------------------------- slurm ---
start_ctld() {
  local end
  if pid_of "$RUN/slurmctld.pid" slurmctld >/dev/null; then return 0; fi
  mkdir -p "$STATE/ctld"
  rm -f "$RUN/slurmctld.pid"
  in_cluster slurmctld -f "$CONF" </dev/null >>"$LOG/slurmctld.out" 2>&1 \
    || die "slurmctld did not start, see $LOG/slurmctld.log"
  end=$((SECONDS + WAIT))
  until ctld_up; do
    pid_of "$RUN/slurmctld.pid" slurmctld >/dev/null || [ ! -s "$RUN/slurmctld.pid" ] \
      || die "slurmctld exited, see $LOG/slurmctld.log"
    ((SECONDS < end)) || die "slurmctld not answering after $WAIT s, see $LOG/slurmctld.log"
    sleep 0.1
  done
  log "slurmctld up on port $CTLD_PORT (pid $(pid_of "$RUN/slurmctld.pid" slurmctld || echo '?'))"
}

# start_slurmd NAME: start node NAME's slurmd unless it runs; BERTH_SLURM_NODE in its
# environment (inherited by its slurmstepd's) tells which node a process belongs to.
start_slurmd() {
  local name=$1 pidfile end
  pidfile=$(slurmd_pidfile "$name")
  if pid_of "$pidfile" slurmd >/dev/null; then return 0; fi
  mkdir -p "$STATE/$name"
  BERTH_SLURM_NODE="$DIR:$name" in_cluster slurmd -f "$CONF" -N "$name" \
    </dev/null >>"$LOG/slurmd-$name.out" 2>&1 || die "slurmd $name did not start, see $LOG/slurmd-$name.log"
  end=$((SECONDS + WAIT))
  until pid_of "$pidfile" slurmd >/dev/null; do
    ((SECONDS < end)) || die "slurmd $name not running after $WAIT s, see $LOG/slurmd-$name.log"
    sleep 0.1
  done
  log "slurmd $name up on port $(node_port "$name") (pid $(pid_of "$pidfile" slurmd || echo '?'))"
}

node_port() { sed -n "s/^NodeName=$1 .* Port=\([0-9]*\) .*/\1/p" "$CONF"; }

# node_state NAME: the node's compact state as sinfo shows it (idle, idle*, down*, mix, ...)
node_state() { in_cluster sinfo -h -N -n "$1" -o '%t' 2>/dev/null | head -1; }

# nodes_ready NAME...: true when every named node is up (idle, mix or alloc, answering).
# A node that answers but is down, drained or failed (left so by an earlier run) is resumed.
declare -A RESUMED=()
STATES=""
nodes_ready() {
  local name st ready=0
  STATES=$(in_cluster sinfo -h -N -o '%N %t' 2>/dev/null) || return 1
  for name in "$@"; do
    st=$(awk -v n="$name" '$1 == n { print $2; exit }' <<<"$STATES")
    case $st in
      idle | mix | alloc) ready=$((ready + 1)) ;;
      down | drain | drng | fail | failg)
        if [ -z "${RESUMED[$name]:-}" ]; then
          RESUMED[$name]=1
          log "node $name is $st: resuming it"
          in_cluster scontrol update NodeName="$name" State=RESUME >/dev/null 2>&1 || true
        fi
        ;;
    esac
  done
  ((ready == $#))
}

# wait_nodes NAME...: poll until nodes_ready, or die at the deadline
wait_nodes() {
  local end=$((SECONDS + WAIT))
  until nodes_ready "$@"; do
    ((SECONDS < end)) || die "nodes not all up after $WAIT s: $(paste -sd ' ' <<<"$STATES") (see $LOG/)"
    sleep 0.2
  done
}

all_nodes() {
  local k
  for ((k = 1; k <= NODES; k++)); do echo "n$k"; done
}

# stop_slurm [munged]: slurmctld, then every slurmd of this directory (in this order the
# controller has no RPC to a vanished slurmd left to time out while it shuts down), and with
# "munged" munged together with the slurmd's (each takes about 2 s to exit)
stop_slurm() {
  local name pid names=() pids=()
  if pid=$(pid_of "$RUN/slurmctld.pid" slurmctld); then stop_pids slurmctld "$pid"; fi
  while read -r name pid; do
    names+=("slurmd-$name")
    pids+=("$pid")
  done < <(running_slurmds)
  if [ "${1:-}" = munged ] && pid=$(pid_of "$RUN/munged.pid" munged); then
    names+=(munged)
    pids+=("$pid")
  fi
  ((${#pids[@]} == 0)) || stop_pids "${names[*]}" "${pids[@]}"
}

# leftover_steps: pids of this cluster's slurmstepd's that outlived their slurmd
leftover_steps() {
  local p comm
  for p in /proc/[0-9]*; do
    { read -r comm <"$p/comm"; } 2>/dev/null || continue
    [ "$comm" = slurmstepd ] || continue
    grep -qaF "BERTH_SLURM_NODE=$DIR:" "$p/environ" 2>/dev/null && echo "${p#/proc/}"
  done
  return 0
}

# -------------------------------------------------------------------------------- commands ---
cmd_start() {
  while (($# > 0)); do
    case $1 in
      --nodes | -n) (($# >= 2)) || usage; NODES=$2; shift 2 ;;
      --nodes=*) NODES=${1#--nodes=}; shift ;;
      *) usage ;;
    esac
  done
  check_settings
  local t0 name missing=() nodes=() old
  t0=$(now)
  mapfile -t nodes < <(all_nodes)
  mkdir -p "$DIR" "$ETC" "$LOG" "$RUN" "$STATE/ctld"
  # Jobs of other users run their script from a node's spool directory under $STATE: made by a
  # shell whose umask is 077, it let nobody but root in (execve of slurm_script: Permission denied).
  chmod 0755 "$DIR" "$STATE"
  ensure_installed
  make_gpus
  gen_conf >"$CONF.new"
  if [ -f "$CONF" ] && cmp -s "$CONF.new" "$CONF"; then
    rm -f "$CONF.new"
    if pid_of "$RUN/munged.pid" munged >/dev/null && ctld_up && [ -z "$(missing_slurmds)" ] \
      && nodes_ready "${nodes[@]}"; then
      log "already up: $NODES node(s) in $DIR"
      echo "export SLURM_CONF=$CONF"
      return 0
    fi
  else
    if pid_of "$RUN/slurmctld.pid" slurmctld >/dev/null || [ -n "$(running_slurmds)" ]; then
      old=$(conf_nodes | wc -l)
      if ((old != NODES)); then
        log "up with $old node(s), $NODES wanted: restarting"
      else
        log "up with another configuration: restarting"
      fi
      stop_slurm
    fi
    mv "$CONF.new" "$CONF"
  fi
  log "starting $NODES node(s) in $DIR"
  start_munge
  start_ctld
  mapfile -t missing < <(missing_slurmds)
  for name in "${missing[@]}"; do start_slurmd "$name"; done
  wait_nodes "${nodes[@]}"
  log "up in $(since "$t0") s: $(in_cluster sinfo -h -o '%D %t %N' | paste -sd ',' | sed 's/,/, /g')"
  echo "export SLURM_CONF=$CONF"
}

# missing_slurmds: the configured nodes whose slurmd is not running
missing_slurmds() {
  local name
  while read -r name; do
    pid_of "$(slurmd_pidfile "$name")" slurmd >/dev/null || echo "$name"
  done < <(all_nodes)
}

cmd_stop() {
  local steps
  stop_slurm munged
  steps=$(leftover_steps | paste -sd ' ')
  [ -z "$steps" ] || log "note: job steps still running (slurmstepd pid $steps); start reattaches to them"
  log "stopped (state kept in $DIR)"
}

cmd_status() {
  local d pid name
  for d in munged slurmctld; do
    if pid=$(pid_of "$RUN/$d.pid" "$d"); then echo "$d: running (pid $pid)"; else echo "$d: not running"; fi
  done
  while read -r name; do
    if pid=$(pid_of "$(slurmd_pidfile "$name")" slurmd); then
      echo "slurmd $name: running (pid $pid)"
    else
      echo "slurmd $name: not running"
    fi
  done < <(conf_nodes)
  if ctld_up; then
    in_cluster sinfo
    return 0
  fi
  echo "slurmctld not answering (SLURM_CONF=$CONF)"
  return 1
}

# known_node NAME: die unless the current configuration defines node NAME
known_node() {
  [ -f "$CONF" ] || die "no configuration in $DIR; run start first"
  conf_nodes | grep -qxF -- "$1" || die "no node '$1' in $CONF (nodes: $(conf_nodes | paste -sd ' '))"
}

cmd_node_kill() {
  local name=$1 pid end
  known_node "$name"
  pid=$(pid_of "$(slurmd_pidfile "$name")" slurmd) || die "slurmd $name is not running"
  SLURMD_TIMEOUT=$(sed -n 's/^SlurmdTimeout=//p' "$CONF")
  MESSAGE_TIMEOUT=$(sed -n 's/^MessageTimeout=//p' "$CONF")
  kill -KILL "$pid"
  end=$((SECONDS + WAIT))
  while kill -0 "$pid" 2>/dev/null; do
    ((SECONDS < end)) || die "slurmd $name (pid $pid) survived SIGKILL for $WAIT s"
    sleep 0.05
  done
  log "killed slurmd $name (pid $pid): not responding within $(nr_bound) s, DOWN within $(down_bound) s"
}

# the bounds stated in gen_conf, in seconds after a slurmd dies
nr_bound() { echo $((SLURMD_TIMEOUT * 2 / 3 + MESSAGE_TIMEOUT + 4)); }
down_bound() { echo $((SLURMD_TIMEOUT + 2 * MESSAGE_TIMEOUT + 5)); }

cmd_node_start() {
  local name=$1 t0 end st
  known_node "$name"
  ctld_up || die "slurmctld is not answering; run start"
  t0=$(now)
  start_slurmd "$name"
  # Wait until the controller has heard from the node (its state loses the '*'); a node
  # that was DOWN comes back by itself (with ReturnToService=2) once its slurmd registers.
  end=$((SECONDS + WAIT))
  while :; do
    st=$(node_state "$name")
    case $st in *'*' | '') ;; *) break ;; esac
    ((SECONDS < end)) || die "node $name still '$st' after $WAIT s, see $LOG/slurmd-$name.log"
    sleep 0.2
  done
  log "node $name answering after $(since "$t0") s: $st"
  case $st in
    down* | drain* | drng* | fail*)
      log "node $name stays $st until resumed: scontrol update nodename=$name state=resume" ;;
  esac
}

# with_lock COMMAND ARGS...: run this script's COMMAND again under an exclusive flock on $LOCK and
# exit with its status. flock -o: the daemons that start launches must not inherit the lock's
# descriptor, or the lock would live as long as they do.
with_lock() {
  local rc=0 wait
  is_uint "$WAIT" || die "WAIT must be a whole number, not '$WAIT'"
  wait=$((WAIT * 10))
  mkdir -p "$STATE"
  BERTH_SLURM_LOCKED=$LOCK flock -o -w "$wait" -E 75 "$LOCK" "$BASH" "$0" "$@" || rc=$?
  ((rc != 75)) || die "another start or stop still holds $LOCK after $wait s"
  exit "$rc"
}

main() {
  local cmd=${1:-}
  (($# > 0)) && shift
  case $cmd in
    start | stop) [ "$LOCKED" = "$LOCK" ] || with_lock "$cmd" "$@" ;;
  esac
  case $cmd in
    start) cmd_start "$@" ;;
    stop) (($# == 0)) || usage; cmd_stop ;;
    status) (($# == 0)) || usage; cmd_status ;;
    env) (($# == 0)) || usage; echo "export SLURM_CONF=$CONF" ;;
    conf) (($# == 0)) || usage; check_settings; gen_conf ;;
    node-kill) (($# == 1)) || usage; cmd_node_kill "$1" ;;
    node-start) (($# == 1)) || usage; cmd_node_start "$1" ;;
    -h | --help | help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
    *) usage ;;
  esac
}

main "$@"
