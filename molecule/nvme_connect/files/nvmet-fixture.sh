#!/usr/bin/env bash
# TEST FIXTURE for the nvme_connect molecule scenario, not a product: a minimal
# NVMe-oF target on te1 built directly in configfs (the nvmet_* modules of the
# collection are tested in their own scenario). Idempotent: it tears down what it
# made before building it again.
#
#   nvmet-fixture.sh HOSTNQN   build: two subsystems, a TCP and an RDMA port
#   nvmet-fixture.sh --clear   remove everything it made
#
# Subsystems (each with one 256 MiB sparse-file namespace):
#   nqn.2024-01.io.aiinfra.test:plain  allow_any_host=1, no authentication
#   nqn.2024-01.io.aiinfra.test:auth   only HOSTNQN, DH-HMAC-CHAP with the keys in
#                                      /root/nvmet-fixture/{host,ctrl}.key
# Ports on 10.99.0.1: 1 = tcp 4420, 2 = rdma 4421 (soft-RoCE rxe0 on eth1).
set -euo pipefail
CFG=/sys/kernel/config/nvmet
DIR=/root/nvmet-fixture
ADDR=10.99.0.1
SUBSYS=(nqn.2024-01.io.aiinfra.test:plain nqn.2024-01.io.aiinfra.test:auth)

clear_all() {
  local p s
  for p in 1 2; do
    [ -d "$CFG/ports/$p" ] || continue
    find "$CFG/ports/$p/subsystems" -mindepth 1 -maxdepth 1 -type l -exec rm -f {} +
    rmdir "$CFG/ports/$p"
  done
  for s in "${SUBSYS[@]}"; do
    [ -d "$CFG/subsystems/$s" ] || continue
    find "$CFG/subsystems/$s/allowed_hosts" -mindepth 1 -maxdepth 1 -type l -exec rm -f {} +
    if [ -d "$CFG/subsystems/$s/namespaces/1" ]; then
      echo 0 > "$CFG/subsystems/$s/namespaces/1/enable"
      rmdir "$CFG/subsystems/$s/namespaces/1"
    fi
    rmdir "$CFG/subsystems/$s"
  done
  if [ -f "$DIR/hostnqn" ] && [ -d "$CFG/hosts/$(cat "$DIR/hostnqn")" ]; then rmdir "$CFG/hosts/$(cat "$DIR/hostnqn")"; fi
}

if [ "${1:-}" = --clear ]; then clear_all; exit 0; fi
HOSTNQN=${1:?usage: nvmet-fixture.sh HOSTNQN | --clear}

modprobe -a nvmet nvmet_tcp nvmet_rdma rdma_rxe
rdma link show | grep -q "link rxe0/" || rdma link add rxe0 type rxe netdev eth1
mkdir -p "$DIR"
clear_all
echo "$HOSTNQN" > "$DIR/hostnqn"

# DH-HMAC-CHAP secrets, made once and kept so re-runs agree with the initiator.
for k in host ctrl wrong; do
  [ -s "$DIR/$k.key" ] || nvme gen-dhchap-key > "$DIR/$k.key"
done
chmod 600 "$DIR"/*.key

mkdir "$CFG/hosts/$HOSTNQN"
echo "hmac(sha256)" > "$CFG/hosts/$HOSTNQN/dhchap_hash"
echo "ffdhe2048" > "$CFG/hosts/$HOSTNQN/dhchap_dhgroup"
cat "$DIR/host.key" > "$CFG/hosts/$HOSTNQN/dhchap_key"
cat "$DIR/ctrl.key" > "$CFG/hosts/$HOSTNQN/dhchap_ctrl_key"

for s in "${SUBSYS[@]}"; do
  name=${s##*:}
  truncate -s 256M "$DIR/$name.img"
  mkdir "$CFG/subsystems/$s"
  mkdir "$CFG/subsystems/$s/namespaces/1"
  echo "$DIR/$name.img" > "$CFG/subsystems/$s/namespaces/1/device_path"
  echo 1 > "$CFG/subsystems/$s/namespaces/1/enable"
done
echo 1 > "$CFG/subsystems/${SUBSYS[0]}/attr_allow_any_host"
echo 0 > "$CFG/subsystems/${SUBSYS[1]}/attr_allow_any_host"
ln -s "$CFG/hosts/$HOSTNQN" "$CFG/subsystems/${SUBSYS[1]}/allowed_hosts/$HOSTNQN"

make_port() {  # id trtype trsvcid
  mkdir "$CFG/ports/$1"
  echo "$2" > "$CFG/ports/$1/addr_trtype"
  echo ipv4 > "$CFG/ports/$1/addr_adrfam"
  echo "$ADDR" > "$CFG/ports/$1/addr_traddr"
  echo "$3" > "$CFG/ports/$1/addr_trsvcid"
  for s in "${SUBSYS[@]}"; do ln -s "$CFG/subsystems/$s" "$CFG/ports/$1/subsystems/$s"; done
}
make_port 1 tcp 4420
make_port 2 rdma 4421
echo "nvmet fixture ready: ${SUBSYS[*]} on tcp $ADDR:4420 and rdma $ADDR:4421"
