#!/usr/bin/env bash
# The real end-to-end check of `cnnbench plan --slurm`: installs Slurm and MUNGE from
# Debian's packages (when missing), starts a one-node cluster on this machine, submits
# the job array `cnnbench plan --slurm` writes for the guide's tiny matrix
# (docs/src/cluster/tiny.toml: 4 cells, resnet18 and mobilenet-v2 at 32×32, 3 passes),
# waits for it, checks that every cell wrote its result, reports the merged results,
# resubmits the array (every cell must be skipped), and stops the daemons it started.
#
# Needs root (it installs packages and runs slurmd) and a built binary:
#   cargo build --release && scripts/slurm_e2e.sh
# CNNBENCH=PATH picks another binary. Prints how long the install and the run took.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
cnnbench="$(realpath "${CNNBENCH:-target/release/cnnbench}")"
[ -x "$cnnbench" ] || { echo "no cnnbench binary at $cnnbench: run cargo build --release first" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "scripts/slurm_e2e.sh installs Slurm and starts slurmd: run it as root" >&2; exit 1; }

t0=$(date +%s)
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    echo "== installing slurm-wlm and munge from Debian"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq slurm-wlm munge >/dev/null
else
    echo "== slurm-wlm and munge are installed"
fi
t_installed=$(date +%s)

work="$(mktemp -d /tmp/cnnbench-slurm.XXXXXX)"
chmod 755 "$work"
pids=()
cleanup() {
    status=$?
    echo "== stopping the daemons"
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    done
    if [ "$status" -ne 0 ]; then
        echo "-- failed; the logs:" >&2
        tail -n 30 "$work"/*.log "$work"/slurm-*.out 2>/dev/null >&2 || true
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT

echo "== MUNGE (Slurm's authentication) in $work"
mkdir -p "$work/munge"
chown munge:munge "$work/munge"
chmod 755 "$work/munge"
if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key
    chmod 400 /etc/munge/munge.key
fi
socket="$work/munge/munge.socket"
runuser -u munge -- munged --socket="$socket" --pid-file="$work/munge/munged.pid" \
    --log-file="$work/munge/munged.log" --seed-file="$work/munge/munged.seed"
pids+=("$(cat "$work/munge/munged.pid")")

echo "== a one-node Slurm cluster: $(hostname -s), $(nproc) CPUs"
node="$(hostname -s)"
memory_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 9 / 10 ))
mkdir -p "$work/state" "$work/spool"
cat > "$work/slurm.conf" <<EOF
ClusterName=cnnbench-e2e
SlurmctldHost=$node
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName=$node CPUs=$(nproc) RealMemory=$memory_mb State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$work/slurm.conf"
slurmctld
for _ in $(seq 100); do [ -s "$work/slurmctld.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$work/slurmctld.pid")")
slurmd
for _ in $(seq 100); do [ -s "$work/slurmd.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$work/slurmd.pid")")
for _ in $(seq 60); do
    sinfo -h -o %T 2>/dev/null | grep -qx idle && break
    sleep 1
done
sinfo

echo "== the matrix, and the job array cnnbench plan writes for it"
cp docs/src/cluster/tiny.toml "$work/matrix.toml"
cd "$work"
"$cnnbench" plan matrix.toml --list
"$cnnbench" plan matrix.toml --slurm --partition debug --cpus-per-task 1 --max-parallel 2 \
    --time 0:10:00 --output "$work/results" > job.sh
grep '^#SBATCH' job.sh
bash -n job.sh

echo "== sbatch --wait job.sh"
t_run=$(date +%s)
timeout 600 sbatch --wait job.sh
t_ran=$(date +%s)
files=$(find results -name '*.json' | wc -l)
echo "the array wrote $files result files"
[ "$files" -eq 4 ] || { echo "expected 4 result files, one per cell" >&2; exit 1; }

echo "== cnnbench report results"
"$cnnbench" report results

echo "== resubmitted: every cell must be skipped"
timeout 300 sbatch --wait job.sh
skipped=$(cat slurm-*.out | grep -c 'skipped' || true)
[ "$skipped" -eq 4 ] || { echo "expected the 4 cells to be skipped, saw $skipped" >&2; exit 1; }
[ "$(find results -name '*.json' | wc -l)" -eq 4 ] || { echo "a resubmitted cell wrote a second result" >&2; exit 1; }
t_done=$(date +%s)
cd "$repo"

echo "== slurm e2e passed: install $((t_installed - t0)) s, cluster start $((t_run - t_installed)) s, array of 4 cells $((t_ran - t_run)) s, resubmission $((t_done - t_ran)) s, total $((t_done - t0)) s"
