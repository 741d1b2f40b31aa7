#!/bin/sh
# A throw-away SLURM on 127.0.0.1 for bench/slurm_side_by_side.py (never for tests).
#
#   bench/slurm_local.sh start DIR   # munged, slurmctld and one slurmd, all under DIR
#   bench/slurm_local.sh stop DIR
#   SLURM_CONF=DIR/slurm.conf sbatch ...
#
# Needs Debian's slurmctld, slurmd, slurm-client and munge (apt-get install), run as root,
# and a host name that resolves to 127.0.0.1 (the node is this host, by that name). Four fake
# GPUs: gres.conf File= points at links to /dev/null. Two more nodes (gpu02, gpu03) are
# defined but never started (DOWN), so held jobs and sbatch --test-only can name them. Every
# node claims 32 CPUs and 256 GiB (config_overrides), so requests are read, not refused.
set -eu
cmd=${1:?usage: slurm_local.sh start|stop DIR}
dir=$(realpath -m "${2:?usage: slurm_local.sh start|stop DIR}")

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [ "$cmd" = stop ]; then
    for name in slurmd slurmctld munged; do
        if [ -f "$dir/$name.pid" ]; then kill "$(cat "$dir/$name.pid")" 2>/dev/null || true; fi
    done
    exit 0
fi

host=$(hostname)
getent hosts "$host" | grep -q '^127\.' || { echo "$host must resolve to 127.0.0.1" >&2; exit 2; }
mkdir -p "$dir/state" "$dir/spool" "$dir/dev" "$dir/munge"
chmod 0700 "$dir/munge"
for i in 0 1 2 3; do ln -sf /dev/null "$dir/dev/nvidia$i"; done
[ -f "$dir/munge/munge.key" ] || { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null; chmod 0400 "$dir/munge/munge.key"; }
cat > "$dir/slurm.conf" <<EOF
ClusterName=rotabench
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
ReturnToService=2
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
PriorityType=priority/multifactor
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
NodeName=DEFAULT CPUs=32 RealMemory=262144 Gres=gpu:4
NodeName=$host NodeAddr=127.0.0.1 State=UNKNOWN Features=a100,ib,rack1
NodeName=gpu02 NodeAddr=127.0.0.1 State=DOWN Features=a100,ib,rack2
NodeName=gpu03 NodeAddr=127.0.0.1 State=DOWN Features=v100,ib,rack2
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=debug Nodes=$host MaxTime=30 State=UP
EOF
echo "NodeName=$host Name=gpu File=$dir/dev/nvidia[0-3]" > "$dir/gres.conf"
munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed" \
    --force
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$dir/slurm.conf" -i
slurmd -f "$dir/slurm.conf"
for _ in $(seq 1 60); do
    if sinfo -h -n "$host" -o %t 2>/dev/null | grep -q idle; then
        echo "SLURM up: export SLURM_CONF=$dir/slurm.conf"
        exit 0
    fi
    sleep 0.5
done
echo "SLURM did not come up; see $dir/*.log" >&2
exit 1
