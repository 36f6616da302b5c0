#!/usr/bin/env bash
# THE SEED'S SCRIPT, adapted only where marked ADAPTED (benchmark baseline for
# benchmarks/nvmeof_seed_vs_playbook.sh). Source: the seed field guide,
# ../shared/seed/000_ac94aacb1b8e0940.txt, section 3.3 (NVMe-oF example).

SCRIPT_DIR=$(dirname "$(realpath "$0")")
source "$SCRIPT_DIR/../config.sh" || { echo "Error: config.sh not found!"; exit 1; }

echo "=== Testing I/O on Remote NVMe Device ($REMOTE_NVME_DEV_ON_INITIATOR) ==="

# 1. Check if device exists
if [ ! -b "$REMOTE_NVME_DEV_ON_INITIATOR" ]; then
    echo "Error: Remote NVMe device $REMOTE_NVME_DEV_ON_INITIATOR not found! Is it connected?"
    exit 1
fi
echo "[1/4] Device $REMOTE_NVME_DEV_ON_INITIATOR found."

# 2. Format (if not already formatted)
echo "[2/4] Formatting $REMOTE_NVME_DEV_ON_INITIATOR (ext4)..."
sudo mkfs.ext4 $REMOTE_NVME_DEV_ON_INITIATOR || { echo "Error: mkfs failed."; exit 1; }

# 3. Mount
echo "[3/4] Mounting $REMOTE_NVME_DEV_ON_INITIATOR to $MOUNT_POINT..."
sudo mkdir -p $MOUNT_POINT
sudo mount $REMOTE_NVME_DEV_ON_INITIATOR $MOUNT_POINT || { echo "Error: mount failed."; exit 1; }

# 4. Basic I/O Test
echo "[4/4] Performing basic read/write test..."
TEST_FILE="$MOUNT_POINT/test_$(date +%s).txt"
TEST_STRING="NVMe-oF RDMA test successful at $(date)"
echo "$TEST_STRING" | sudo tee "$TEST_FILE" > /dev/null || { echo "Error: write failed."; sudo umount $MOUNT_POINT; exit 1; }
READ_BACK=$(sudo cat "$TEST_FILE") || { echo "Error: read failed."; sudo umount $MOUNT_POINT; exit 1; }

if [ "$READ_BACK" == "$TEST_STRING" ]; then
    echo "Read/Write content matched: OK"
else
    echo "Error: Read/Write content mismatch!"
    echo "Expected: $TEST_STRING"
    echo "Got: $READ_BACK"
    sudo umount $MOUNT_POINT
    exit 1
fi
sudo rm "$TEST_FILE"

# Unmount
sudo umount $MOUNT_POINT || { echo "Warning: umount failed."; exit 1; }
sudo rmdir $MOUNT_POINT 2>/dev/null # Remove if empty

# Optional: Add fio test here
# echo "--- Running fio test (example) ---"
# if command -v fio &> /dev/null; then
#    sudo fio --name=randwrite --rw=randwrite --bs=4k --iodepth=32 --size=256M \
#             --ioengine=libaio --direct=1 --filename=$REMOTE_NVME_DEV_ON_INITIATOR \
#             --numjobs=1 --runtime=30 --group_reporting --output-format=terse
# else
#    echo "fio not installed. Skipping fio test."
# fi

echo "=== I/O Test Completed Successfully ==="
