#!/usr/bin/env bash
# A real Slurm cluster on this one host, for fad's Slurm executor tests and for
# trying fad on Slurm without a cluster: munged, slurmctld and one slurmd per
# simulated node (each with its own name and port), all under one directory.
#
#   scripts/slurm-local.sh start   # returns once sinfo shows every node idle
#   scripts/slurm-local.sh stop    # stops the daemons and removes the directory
#   scripts/slurm-local.sh env     # prints the SLURM_CONF line to eval
#
# Both are idempotent. Environment:
#   FAD_SLURM_DIR     the directory it owns (default /tmp/fad-slurm-local)
#   FAD_SLURM_NODES   simulated nodes, 1-4 (default 2)
#   FAD_SLURM_NODE_CPUS, FAD_SLURM_NODE_MEM_MB   each node's size as Slurm sees it
#                     (default 2 CPUs and 3072 MB: steps are confined to what they ask)
#   FAD_SLURM_PORT    the controller's port; nodes use the next ones (default 16817)
#
# It needs root (slurmd manages cgroups and runs steps as their users) and
# Debian's slurm-wlm and munge (scripts/setup.sh installs them). Step memory is
# enforced by task/cgroup (ConstrainRAMSpace) where the cgroup v1 memory
# controller or cgroup v2 is mounted. There is no slurmdbd: sacct has nothing
# to read, so step peaks come from sstat while a step runs and from fad's own
# step wrapper at its end.
set -euo pipefail

DIR=${FAD_SLURM_DIR:-/tmp/fad-slurm-local}
NODES=${FAD_SLURM_NODES:-2}
NODE_CPUS=${FAD_SLURM_NODE_CPUS:-2}
NODE_MEM_MB=${FAD_SLURM_NODE_MEM_MB:-3072}
PORT=${FAD_SLURM_PORT:-16817}
CONF="$DIR/etc/slurm.conf"

die() {
  echo "slurm-local: $*" >&2
  exit 1
}

usage() {
  echo "usage: scripts/slurm-local.sh start|stop|env" >&2
  exit 2
}

node_names() {
  local i
  for ((i = 1; i <= NODES; i++)); do echo "fadnode$i"; done
}

pid_alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Stops the daemon whose pid file is $1, waiting for it to go.
stop_pidfile() {
  local pidfile=$1 pid i
  [[ -f "$pidfile" ]] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

write_config() {
  local host cgroup_plugin
  host=$(hostname -s)
  mkdir -p "$DIR"/{etc,state,log,run,munge} "$DIR"/spool
  # task/cgroup confines each step to its --mem; without a memory controller
  # Slurm still runs steps, unconfined.
  cgroup_plugin=none
  if [[ -d /sys/fs/cgroup/memory || -f /sys/fs/cgroup/cgroup.controllers ]]; then cgroup_plugin=cgroup; fi
  cat >"$CONF" <<EOF
# Written by scripts/slurm-local.sh: a single-host test cluster.
ClusterName=fadlocal
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ReturnToService=2
SlurmdParameters=config_overrides
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ProctrackType=proctrack/$([[ $cgroup_plugin == cgroup ]] && echo cgroup || echo linuxproc)
TaskPlugin=task/$cgroup_plugin
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
InactiveLimit=0
KillWait=5
MinJobAge=60
SlurmctldTimeout=30
SlurmdTimeout=30
Waittime=0
EOF
  local port=$((PORT + 1)) name
  for name in $(node_names); do
    echo "NodeName=$name NodeHostname=$host NodeAddr=127.0.0.1 Port=$port CPUs=$NODE_CPUS RealMemory=$NODE_MEM_MB State=UNKNOWN" >>"$CONF"
    port=$((port + 1))
    mkdir -p "$DIR/spool/$name"
  done
  echo "PartitionName=fad Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$CONF"
  cat >"$DIR/etc/cgroup.conf" <<EOF
ConstrainCores=no
ConstrainRAMSpace=yes
ConstrainSwapSpace=yes
AllowedSwapSpace=0
EOF
}

start_munge() {
  pid_alive "$DIR/run/munged.pid" && return 0
  if [[ ! -f "$DIR/munge/munge.key" ]]; then
    dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  fi
  chmod 700 "$DIR/munge"
  chmod 400 "$DIR/munge/munge.key"
  munged --force --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.socket" \
    --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/seed" ||
    die "munged did not start; see $DIR/log/munged.log"
}

start() {
  [[ $(id -u) == 0 ]] || die "needs root (slurmd runs steps as their users and manages cgroups)"
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null ||
    die "slurm-wlm and munge are not installed (run scripts/setup.sh)"
  [[ $NODES =~ ^[1-4]$ ]] || die "FAD_SLURM_NODES must be 1-4, got '$NODES'"
  if ! pid_alive "$DIR/run/slurmctld.pid"; then
    write_config
  fi
  export SLURM_CONF="$CONF"
  start_munge
  if ! pid_alive "$DIR/run/slurmctld.pid"; then
    # -i: ignore state left by an earlier run of this directory.
    slurmctld -f "$CONF" -i || die "slurmctld did not start; see $DIR/log/slurmctld.log"
  fi
  local name
  for name in $(node_names); do
    pid_alive "$DIR/run/slurmd-$name.pid" && continue
    slurmd -f "$CONF" -N "$name" || die "slurmd $name did not start; see $DIR/log/slurmd-$name.log"
  done
  # Ready once every node is idle (or allocated, when jobs already run).
  local i states
  for ((i = 0; i < 300; i++)); do
    states=$(sinfo -h -N -o '%N %t' 2>/dev/null || true)
    if [[ -n $states ]] && ! grep -qvE ' (idle|alloc|mix)$' <<<"$states"; then
      [[ $(wc -l <<<"$states") -ge $NODES ]] && {
        echo "slurm-local: $NODES node(s) up (SLURM_CONF=$CONF)"
        return 0
      }
    fi
    sleep 0.1
  done
  die "nodes not idle after 30 s: $(tr '\n' ' ' <<<"$states"); see $DIR/log/"
}

stop() {
  [[ -d $DIR ]] || return 0
  if pid_alive "$DIR/run/slurmctld.pid"; then
    SLURM_CONF="$CONF" scancel --quiet --user="$(id -un)" 2>/dev/null || true
  fi
  local f
  for f in "$DIR"/run/slurmd-*.pid; do [[ -e $f ]] && stop_pidfile "$f"; done
  stop_pidfile "$DIR/run/slurmctld.pid"
  stop_pidfile "$DIR/run/munged.pid"
  # Steps' cgroups left behind by a killed slurmd hold no processes now.
  find /sys/fs/cgroup/*/slurm_* -depth -type d -exec rmdir {} + 2>/dev/null || true
  rm -rf "$DIR"
  echo "slurm-local: stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) usage ;;
esac
