#!/usr/bin/env bash
# Installs the Debian packages for a one-node SLURM test cluster (slurmctld, slurmd, client, munge).
# Idempotent: does nothing when every binary is already present. Installing starts no daemon;
# tests/slurm_cluster.py starts and stops them. Needs root (or sudo) and apt-get.
set -euo pipefail
need=(slurmctld slurmd sbatch squeue munged)
missing=0
for b in "${need[@]}"; do
  command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || missing=1
done
if [ "$missing" = 0 ]; then
  echo "slurm and munge already installed" >&2
  exit 0
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends slurmctld slurmd slurm-client munge
echo "installed: $(/usr/sbin/slurmctld -V 2>/dev/null || true)" >&2
