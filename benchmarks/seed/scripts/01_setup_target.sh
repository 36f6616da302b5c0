#!/usr/bin/env bash
# THE SEED'S SCRIPT, adapted only where marked ADAPTED (benchmark baseline for
# benchmarks/nvmeof_seed_vs_playbook.sh). Source: the seed field guide,
# ../shared/seed/000_ac94aacb1b8e0940.txt, section 3.3 (NVMe-oF example).

SCRIPT_DIR=$(dirname "$(realpath "$0")")
source "$SCRIPT_DIR/../config.sh" || { echo "Error: config.sh not found!"; exit 1; }

echo "=== Setting up NVMe-oF Target ($TARGET_NQN) ==="

# 1. Load modules
echo "[1/6] Loading kernel modules..."
sudo modprobe nvmet || { echo "Failed to load nvmet"; exit 1; }
sudo modprobe nvmet-rdma || { echo "Failed to load nvmet-rdma"; exit 1; }
sudo modprobe configfs

# 2. Create backing file and loop device
echo "[2/6] Creating backing file ($TARGET_BACKING_FILE, ${TARGET_BACKING_SIZE_MB}MB)..."
sudo mkdir -p "$(dirname "$TARGET_BACKING_FILE")"
if [ ! -f "$TARGET_BACKING_FILE" ]; then
    sudo dd if=/dev/zero of="$TARGET_BACKING_FILE" bs=1M count=$TARGET_BACKING_SIZE_MB status=progress || { echo "Failed to create backing file"; exit 1; }
else
    echo "Backing file already exists."
fi
sudo losetup -d $(losetup -j $TARGET_BACKING_FILE | cut -d: -f1) 2>/dev/null # Detach if already attached
BACKING_DEV=$(sudo losetup --find --show "$TARGET_BACKING_FILE")
if [ -z "$BACKING_DEV" ]; then echo "Error: Could not set up loop device."; exit 1; fi
echo "Using backing device: $BACKING_DEV"

# 3. Get Initiator NQN (Ensure te2 allows SSH key auth or manually set INITIATOR_NQN in config.sh)
echo "[3/6] Determining Initiator NQN..."
if [ -z "$INITIATOR_NQN" ]; then
    echo "Attempting to fetch Initiator NQN from te2 via SSH..."
    INITIATOR_NQN=$(ssh te2 cat /etc/nvme/hostnqn 2>/dev/null)
fi
if [ -z "$INITIATOR_NQN" ]; then
    echo "Error: Could not automatically get Initiator NQN. Please set INITIATOR_NQN in config.sh"
    sudo losetup -d "$BACKING_DEV" # Clean up loop device
    exit 1
fi
echo "Will allow Initiator NQN: $INITIATOR_NQN"

# 4. Configure using configfs
echo "[4/6] Configuring target via configfs..."
CONFIGFS_MNT="/sys/kernel/config"
if ! mountpoint -q $CONFIGFS_MNT; then sudo mount -t configfs none $CONFIGFS_MNT; fi

# Clean previous config for this NQN/Port if exists
sudo unlink $CONFIGFS_MNT/nvmet/ports/1/subsystems/$TARGET_NQN 2>/dev/null
sudo rmdir $CONFIGFS_MNT/nvmet/ports/1 2>/dev/null
sudo rmdir $CONFIGFS_MNT/nvmet/subsystems/$TARGET_NQN/namespaces/1 2>/dev/null
sudo rmdir $CONFIGFS_MNT/nvmet/subsystems/$TARGET_NQN/allowed_hosts/$INITIATOR_NQN 2>/dev/null
sudo rmdir $CONFIGFS_MNT/nvmet/subsystems/$TARGET_NQN 2>/dev/null

# Create Subsystem
sudo mkdir $CONFIGFS_MNT/nvmet/subsystems/$TARGET_NQN || { echo "Failed to create subsystem"; exit 1; }

# 
echo "Temporarily allowing any host for testing..."
sudo sh -c "echo 1 > $CONFIGFS_MNT/nvmet/subsystems/$TARGET_NQN/attr_allow_any_host" || { echo "Failed to set attr_allow_any_host=1"; exit 1; }

# Create Namespace
sudo mkdir $CONFIGFS_MNT/nvmet/subsystems/$TARGET_NQN/namespaces/1 || { echo "Failed to create namespace 1"; exit 1; }
sudo sh -c "echo -n $BACKING_DEV > $CONFIGFS_MNT/nvmet/subsystems/$TARGET_NQN/namespaces/1/device_path" || { echo "Failed to set device path"; exit 1; }
sudo sh -c "echo 1 > $CONFIGFS_MNT/nvmet/subsystems/$TARGET_NQN/namespaces/1/enable" || { echo "Failed to enable namespace 1"; exit 1; }

# Create Port
sudo mkdir $CONFIGFS_MNT/nvmet/ports/1 || { echo "Failed to create port 1"; exit 1; }
sudo sh -c "echo $TARGET_IP > $CONFIGFS_MNT/nvmet/ports/1/addr_traddr" || { echo "Failed to set traddr"; exit 1; }
sudo sh -c "echo rdma > $CONFIGFS_MNT/nvmet/ports/1/addr_trtype" || { echo "Failed to set trtype"; exit 1; }
sudo sh -c "echo $TARGET_PORT > $CONFIGFS_MNT/nvmet/ports/1/addr_trsvcid" || { echo "Failed to set trsvcid"; exit 1; }
sudo sh -c "echo ipv4 > $CONFIGFS_MNT/nvmet/ports/1/addr_adrfam" || { echo "Failed to set adrfam"; exit 1; }

# Link Subsystem to Port
echo "[5/6] Linking subsystem to port..."
sudo ln -s $CONFIGFS_MNT/nvmet/subsystems/$TARGET_NQN $CONFIGFS_MNT/nvmet/ports/1/subsystems/$TARGET_NQN || { echo "Failed to link subsystem to port"; exit 1; }

echo "[6/6] Checking firewall/security group..."
echo "IMPORTANT: Ensure firewall/security group on te1 allows INBOUND traffic on TCP/RDMA port $TARGET_PORT from te2."

echo "=== Target Setup Complete ==="

sudo nvme list
lsblk
