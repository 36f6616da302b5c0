#!/usr/bin/env bash
# NOT FROM THE SEED: the seed assumes an RDMA NIC. In the lab both VMs use soft-RoCE,
# created the way the lab notes do it; the playbook's soft_roce role does the same.
# usage: 00_soft_roce.sh up|down
case "$1" in
  up) modprobe rdma_rxe && { rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev eth1; } ;;
  down) rdma link delete rxe0 2>/dev/null || true ;;
esac
