#!/usr/bin/env bash
# THE SEED'S SCRIPT, adapted only where marked ADAPTED (benchmark baseline for
# benchmarks/nvmeof_seed_vs_playbook.sh). Source: the seed field guide,
# ../shared/seed/000_ac94aacb1b8e0940.txt, section 3.3 (NVMe-oF example).

SCRIPT_DIR=$(dirname "$(realpath "$0")")
source "$SCRIPT_DIR/../config.sh" || { echo "Error: config.sh not found!"; exit 1; }

echo "=== Connecting to NVMe-oF Target ($TARGET_NQN) ==="

# 1. Load module
echo "[1/4] Loading nvme-rdma module..."
sudo modprobe nvme-rdma || { echo "Failed to load nvme-rdma"; exit 1; }

# 2. Ensure host NQN file exists
echo "[2/4] Checking initiator NQN file..."
if [ ! -f /etc/nvme/hostnqn ]; then
    echo "Host NQN file not found, generating..."
    sudo nvme gen-hostnqn | sudo tee /etc/nvme/hostnqn || { echo "Failed to generate host NQN"; exit 1; }
fi
echo "Using Initiator NQN: $(cat /etc/nvme/hostnqn)"

# 3. Discover Target
echo "[3/4] Discovering target $TARGET_IP:$TARGET_PORT (RDMA)..."
sudo nvme discover -t rdma -a $TARGET_IP -s $TARGET_PORT
if [ $? -ne 0 ]; then
    echo "Warning: Discover command failed. Connection might still work if NQN is correct."
fi
# Check if target NQN appears in discover output (optional check)
# sudo nvme discover -t rdma -a $TARGET_IP -s $TARGET_PORT | grep -q $TARGET_NQN || echo "Warning: Target NQN not found in discovery."

# 4. Connect to Target
echo "[4/4] Connecting to $TARGET_NQN at $TARGET_IP:$TARGET_PORT (RDMA)..."
sudo nvme connect -t rdma -a $TARGET_IP -s $TARGET_PORT -n $TARGET_NQN
if [ $? -ne 0 ]; then
    echo "Error: Failed to connect to target. Check target status, network, firewall, and NQNs."
    echo "Also, the previous RDMA issues might be preventing connection."
    exit 1
fi

# Verify
echo "--- Verifying Connection ---"
sleep 2
sudo nvme list
lsblk | grep nvme
if ! lsblk | grep -q "$(basename $REMOTE_NVME_DEV_ON_INITIATOR)"; then
     echo "Error: Expected device $REMOTE_NVME_DEV_ON_INITIATOR did not appear."
     exit 1
fi

echo "=== Connection Successful ==="

sudo nvme list
lsblk
