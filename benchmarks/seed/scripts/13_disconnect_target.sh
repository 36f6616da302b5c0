#!/usr/bin/env bash
# THE SEED'S SCRIPT, adapted only where marked ADAPTED (benchmark baseline for
# benchmarks/nvmeof_seed_vs_playbook.sh). Source: the seed field guide,
# ../shared/seed/000_ac94aacb1b8e0940.txt, section 3.3 (NVMe-oF example).

SCRIPT_DIR=$(dirname "$(realpath "$0")")
source "$SCRIPT_DIR/../config.sh" || { echo "Error: config.sh not found!"; exit 1; }

echo "=== Disconnecting from NVMe-oF Target ($TARGET_NQN) ==="

# Ensure TARGET_NQN is set
if [ -z "$TARGET_NQN" ]; then
    echo "Error: TARGET_NQN is not set in config.sh!"
    exit 1
fi

# 1. Disconnect
echo "[1/2] Sending disconnect command for NQN: $TARGET_NQN..."
# Use -n for NQN. If the device node still exists, you could use -d instead.
sudo nvme disconnect -n "$TARGET_NQN"
# Alternatively, disconnect by device name if known:
# sudo nvme disconnect -d "$(basename $REMOTE_NVME_DEV_ON_INITIATOR)"

if [ $? -ne 0 ]; then
    echo "Warning: Disconnect command failed. Maybe already disconnected or device busy?"
fi

# 2. Verify Disconnect
echo "[2/2] Verifying disconnect..."
sleep 1
sudo nvme list
lsblk | grep nvme
if lsblk | grep -q "$(basename $REMOTE_NVME_DEV_ON_INITIATOR)"; then
     echo "Warning: Device $REMOTE_NVME_DEV_ON_INITIATOR still appears after disconnect."
fi

echo "=== Disconnect Process Finished ==="
