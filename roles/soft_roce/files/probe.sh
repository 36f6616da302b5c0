# shellcheck shell=sh
# What the soft_roce role's rdma_link task would look at, in one shell command (the module
# is a Python start on the host; plugins/module_utils/nvme/rdma_link_check.py judges these
# lines). Arguments: the host_state.sh script, then its arguments (the boot unit). Lines:
# host_state.sh's, then "rdmajson JSON" (rdma -j link show on one line) and
# "ibdev hw|virt NAME" per RDMA device (hw: it has a bus device, as rdma_link tells).
hs=$1; shift
sh -c "$hs" sh "$@"
echo "rdmajson $(rdma -j link show 2>/dev/null | tr -d '\n')"
for d in /sys/class/infiniband/*; do
  [ -e "$d" ] || continue
  if [ -e "$d/device" ]; then echo "ibdev hw ${d##*/}"; else echo "ibdev virt ${d##*/}"; fi
done
true
