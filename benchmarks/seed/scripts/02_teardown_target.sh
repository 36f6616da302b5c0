#!/usr/bin/env bash
# THE SEED'S SCRIPT, adapted only where marked ADAPTED (benchmark baseline for
# benchmarks/nvmeof_seed_vs_playbook.sh). Source: the seed field guide,
# ../shared/seed/000_ac94aacb1b8e0940.txt, section 3.3 (NVMe-oF example).

SCRIPT_DIR=$(dirname "$(realpath "$0")")
source "$SCRIPT_DIR/../config.sh" || { echo "Error: config.sh not found!"; exit 1; }

echo "=== Tearing down NVMe-oF Target ($TARGET_NQN) ==="

CONFIGFS_MNT="/sys/kernel/config"
BACKING_DEV=$(losetup -j "$TARGET_BACKING_FILE" | cut -d: -f1) # Find associated loop device

# 1. Unlink Subsystem from Port
echo "[1/4] Unlinking subsystem from port..."
sudo unlink $CONFIGFS_MNT/nvmet/ports/1/subsystems/$TARGET_NQN 2>/dev/null || echo "Warning: Could not unlink subsystem, already unlinked or path incorrect."

# 2. Remove Port
echo "[2/4] Removing port..."
sudo rmdir $CONFIGFS_MNT/nvmet/ports/1 2>/dev/null || echo "Warning: Could not remove port 1, already removed or path incorrect."

# 3. Disable/Remove Namespace and Subsystem
echo "[3/4] Removing subsystem and namespace..."
sudo sh -c "echo 0 > $CONFIGFS_MNT/nvmet/subsystems/$TARGET_NQN/namespaces/1/enable" 2>/dev/null
sudo rmdir $CONFIGFS_MNT/nvmet/subsystems/$TARGET_NQN/namespaces/1 2>/dev/null || echo "Warning: Could not remove namespace 1."
# Remove allowed host if it exists
if [ ! -z "$INITIATOR_NQN" ]; then
  sudo rmdir $CONFIGFS_MNT/nvmet/subsystems/$TARGET_NQN/allowed_hosts/$INITIATOR_NQN 2>/dev/null
fi
sudo rmdir $CONFIGFS_MNT/nvmet/subsystems/$TARGET_NQN 2>/dev/null || echo "Warning: Could not remove subsystem."

# 4. Detach loop device
echo "[4/4] Detaching loop device..."
if [ ! -z "$BACKING_DEV" ] && [ -b "$BACKING_DEV" ]; then
  sudo losetup -d "$BACKING_DEV" || echo "Warning: Failed to detach $BACKING_DEV."
else
  echo "Loop device $BACKING_DEV not found or invalid."
fi

# Optional: Remove backing file
# echo "Optional: Remove backing file '$TARGET_BACKING_FILE' manually if desired."
# sudo rm "$TARGET_BACKING_FILE"

echo "=== Teardown Complete ==="
