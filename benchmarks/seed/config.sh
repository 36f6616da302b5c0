#!/usr/bin/env bash
# THE SEED'S SCRIPT, adapted only where marked ADAPTED (benchmark baseline for
# benchmarks/nvmeof_seed_vs_playbook.sh). Source: the seed field guide,
# ../shared/seed/000_ac94aacb1b8e0940.txt, section 3.3 (NVMe-oF example).

# --- Target (te1) Configuration ---
TARGET_IP="10.99.0.1"  # ADAPTED: te1 on the lab fabric (seed: 172.16.40.93) --      # te1 的 RDMA IP 地址
TARGET_PORT="4420"            # NVMe/RDMA 默认端口
TARGET_NQN="nqn.2024-04.com.example:te1.target1" # Target NQN (必须与 Target 设置一致)
TARGET_BACKING_FILE="/var/lib/nvmet/disk1.img" # Target 上的后端文件路径
TARGET_BACKING_SIZE_MB=1024   # 后端文件大小 (MB)

# --- Initiator (te2) Device/Mount Configuration ---
REMOTE_NVME_DEV_ON_INITIATOR="/dev/nvme0n1" # ADAPTED: te2 has no local NVMe drive (seed: /dev/nvme1n1) -- # te2 上预期的设备名
MOUNT_POINT="/mnt/nvmeof_rdma_test"        # te2 上的挂载点

# ADAPTED: the lab VMs log in as root without sudo; te1 cannot ssh to te2, so the
# benchmark passes INITIATOR_NQN in the environment (the script's own fallback).
command -v sudo >/dev/null 2>&1 || sudo() { "$@"; }
