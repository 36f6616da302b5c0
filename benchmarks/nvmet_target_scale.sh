#!/usr/bin/env bash
# Benchmark (not a test): a whole target of many namespaces on te1, applied three ways,
# side by side in one run on the lab (lab/labctl up first; what it creates is removed).
#
#   (a) shell:    a plain bash script writing configfs directly (mkdir, echo, ln -s per
#                 object, the way the seed does it), run over `labctl ssh`; converge only
#                 (it is not idempotent).
#   (b) module:   aiinfra.fabric.nvmet_target through ansible-playbook (one task, the
#                 document inline), converge and no-op; timed as the whole
#                 ansible-playbook command, as a user runs it.
#   (c) restorer: the boot restorer (nvmet-restore restore, one in-process pass) over
#                 `labctl ssh`, converge and no-op.
#
# 16 subsystems x 16 namespaces through (a), (b), (c); then 64x4, 1x256 (the same 256
# namespaces) and 32x16 (512) through (b) and (c). Namespaces are 1 MiB sparse files. Between
# runs the target is cleared with `nvmet-restore clear` (not timed). Prints a table of
# seconds and ratios. ANSIBLE_CONFIG defaults to lab/ansible.cfg (Mitogen); (b) for 16x16
# runs once more with the stock strategy (ansible.cfg).
#
# --profile adds where the time goes, after the table: ssh and python start on te1, the
# module's in-process pass phase by phase with cProfile (benchmarks/nvmet_target_profile.py,
# converge and no-op), ansible-playbook's own start, the connection (one ping), and the
# nvmet_target task alone for 16x16 and 32x16 (ansible.posix.profile_tasks, after a ping
# opened the connection).
set -euo pipefail
PROFILE=0
[ "${1:-}" != --profile ] || PROFILE=1
cd "$(dirname "$(readlink -f "$0")")/.."
LABCTL=lab/labctl
export ANSIBLE_CONFIG=${ANSIBLE_CONFIG:-$PWD/lab/ansible.cfg}
export ANSIBLE_TIMEOUT=${ANSIBLE_TIMEOUT:-60}
LOG=${BENCH_LOG:-$(mktemp -d /tmp/nvmet-target-bench.XXXXXX)}
DIR=/root/nvmet-bench
PKG=plugins/module_utils/nvmet

now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }
step() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
vm() { "$LABCTL" ssh te1 "$@"; }
restorer() { vm "python3 -c 'import sys; sys.path.insert(0, \"$DIR/lib\"); from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.restore import main; sys.exit(main(sys.argv[1:]))' $*"; }

# document SUBSYSTEMS NAMESPACES: the save-file document (allow_any_host, one TCP port linking all).
document() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
subs, per = int(sys.argv[1]), int(sys.argv[2])
doc = {"hosts": [], "subsystems": [], "ports": [{
    "portid": 9, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "10.99.0.1", "trsvcid": "4439"},
    "subsystems": []}]}
for s in range(subs):
    nqn = "nqn.2024-04.io.aiinfra.bench:s%03d" % s
    doc["subsystems"].append({"nqn": nqn, "attr": {"allow_any_host": "1"}, "allowed_hosts": [], "namespaces": [
        {"nsid": n + 1, "enable": 1, "device": {"path": "/root/nvmet-bench/f%03d.img" % (s * per + n)}}
        for n in range(per)]})
    doc["ports"][0]["subsystems"].append(nqn)
print(json.dumps(doc, indent=1))
EOF
}

# shell_script DOCUMENT: the plain configfs script for a document.
shell_script() {
  python3 - "$1" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
out = ["set -e", "cd /sys/kernel/config/nvmet"]
for s in doc["subsystems"]:
    base = "subsystems/" + s["nqn"]
    out += ["mkdir %s" % base, "echo 1 > %s/attr_allow_any_host" % base]
    for ns in s["namespaces"]:
        nb = "%s/namespaces/%d" % (base, ns["nsid"])
        out += ["mkdir %s" % nb, "echo -n %s > %s/device_path" % (ns["device"]["path"], nb), "echo 1 > %s/enable" % nb]
for p in doc["ports"]:
    pb = "ports/%d" % p["portid"]
    out.append("mkdir %s" % pb)
    for k in ("trtype", "adrfam", "traddr", "trsvcid"):
        out.append("echo %s > %s/addr_%s" % (p["addr"][k], pb, k))
    for nqn in p["subsystems"]:
        out.append("ln -s /sys/kernel/config/nvmet/subsystems/%s %s/subsystems/%s" % (nqn, pb, nqn))
print("\n".join(out))
EOF
}

play() {  # play DOCUMENT LOGNAME: one ansible-playbook run of nvmet_target, timed by the caller
  .venv/bin/ansible-playbook -i inventory/lab benchmarks/nvmet_target_scale.yml \
    -e "nvmet_bench_document=$1" >"$LOG/$2.log" 2>&1 || { step "playbook failed, see $LOG/$2.log"; tail -30 "$LOG/$2.log" >&2; exit 1; }
}

no_bench_objects() { vm "! ls /sys/kernel/config/nvmet/subsystems /sys/kernel/config/nvmet/ports | grep -qx -e 'nqn.2024-04.io.aiinfra.bench:.*' -e 9"; }
clear_target() { restorer clear "$DIR/$1.json" >/dev/null; no_bench_objects; }

$LABCTL status >&2
step "setup (not timed): modules, 512 sparse files, the nvmet package for the restorer, documents"
vm "modprobe nvmet && modprobe nvmet_tcp && mkdir -p $DIR/lib/ansible_collections/aiinfra/fabric/plugins/module_utils \
    && for i in \$(seq -f %03g 0 511); do truncate -s 1M $DIR/f\$i.img; done"
# The whole module_utils tree: the restorer imports more than the nvmet package (atomic_write,
# the transport table, tls); what it does not import is never loaded, so the timing is the same.
tar -C "$(dirname $PKG)" -cf - . | vm "tar -C $DIR/lib/ansible_collections/aiinfra/fabric/plugins/module_utils -xf -"
for layout in 16x16 64x4 1x256 32x16; do
  document "${layout%x*}" "${layout#*x}" >"$LOG/$layout.json"
  vm "cat > $DIR/$layout.json" <"$LOG/$layout.json"
done
shell_script "$LOG/16x16.json" >"$LOG/16x16.sh"
vm "cat > $DIR/16x16.sh" <"$LOG/16x16.sh"
no_bench_objects || { step "te1 already has bench subsystems or port 9; clear them first"; exit 1; }

step "(a) plain shell script, 16x16"
t0=$(now); vm "bash $DIR/16x16.sh"; a=$(since "$t0")
restorer save | python3 -c 'import json,sys; d=json.load(sys.stdin); n=sum(len(s["namespaces"]) for s in d["subsystems"] if s["nqn"].startswith("nqn.2024-04.io.aiinfra.bench:")); assert n == 256, n'
clear_target 16x16

declare -A conv noop cconv cnoop
for layout in 16x16 64x4 1x256 32x16; do
  step "(c) restorer, $layout"
  t0=$(now); restorer restore "$DIR/$layout.json" >"$LOG/c_${layout}_converge.log"; cconv[$layout]=$(since "$t0")
  t0=$(now); restorer restore "$DIR/$layout.json" >"$LOG/c_${layout}_noop.log"; cnoop[$layout]=$(since "$t0")
  [ ! -s "$LOG/c_${layout}_noop.log" ] || { step "restorer no-op applied something: $LOG/c_${layout}_noop.log"; exit 1; }
  step "(c) $layout: converge ${cconv[$layout]} s, no-op ${cnoop[$layout]} s"
  clear_target "$layout"
  step "(b) nvmet_target through ansible-playbook, $layout"
  t0=$(now); play "$LOG/$layout.json" "b_${layout}_converge"; conv[$layout]=$(since "$t0")
  grep -q "changed=1" "$LOG/b_${layout}_converge.log" || { step "converge did not change"; exit 1; }
  t0=$(now); play "$LOG/$layout.json" "b_${layout}_noop"; noop[$layout]=$(since "$t0")
  grep -q "changed=0" "$LOG/b_${layout}_noop.log" || { step "no-op changed"; exit 1; }
  step "(b) $layout: converge ${conv[$layout]} s, no-op ${noop[$layout]} s"
  clear_target "$layout"
done

# (b) again with the stock strategy (the repository's ansible.cfg: SSH with pipelining and
# ControlPersist), which is what users run; 16x16 only.
step "(b) nvmet_target through ansible-playbook, stock strategy, 16x16"
t0=$(now); ANSIBLE_CONFIG=$PWD/ansible.cfg play "$LOG/16x16.json" b_stock_converge; b_stock=$(since "$t0")
grep -q "changed=1" "$LOG/b_stock_converge.log" || { step "converge did not change"; exit 1; }
t0=$(now); ANSIBLE_CONFIG=$PWD/ansible.cfg play "$LOG/16x16.json" b_stock_noop; b_stock_noop=$(since "$t0")
grep -q "changed=0" "$LOG/b_stock_noop.log" || { step "no-op changed"; exit 1; }
step "(b) stock 16x16: converge $b_stock s, no-op $b_stock_noop s"
clear_target 16x16

b=${conv[16x16]}; b_noop=${noop[16x16]}; c=${cconv[16x16]}; c_noop=${cnoop[16x16]}
r() { echo "scale=2; $1 / $2" | bc; }
printf '\nnvmet whole target on te1 (seconds; logs in %s)\n' "$LOG"
printf '%-36s %9s %9s\n' "" converge no-op
printf '%-36s %9.2f %9s\n' "(a) plain shell script, 16x16" "$a" "n/a"
printf '%-36s %9.2f %9.2f\n' "(b) nvmet_target playbook, 16x16" "$b" "$b_noop"
printf '%-36s %9.2f %9.2f\n' "(c) restorer in one pass, 16x16" "$c" "$c_noop"
printf '%-36s %9s %9s\n' "b / c (goal <= 3)" "$(r "$b" "$c")" "$(r "$b_noop" "$c_noop")"
printf '%-36s %9s %9s\n' "b / a" "$(r "$b" "$a")" ""
printf '%-36s %9.2f %9.2f\n' "(b) stock strategy, 16x16" "$b_stock" "$b_stock_noop"
printf '%-36s %9s %9s\n' "b stock / c (goal <= 3)" "$(r "$b_stock" "$c")" "$(r "$b_stock_noop" "$c_noop")"
for layout in 64x4 1x256 32x16; do
  printf '%-36s %9.2f %9.2f\n' "(b) $layout" "${conv[$layout]}" "${noop[$layout]}"
  printf '%-36s %9s %9s\n' "  / (b) 16x16" "$(r "${conv[$layout]}" "$b")" "$(r "${noop[$layout]}" "$b_noop")"
  printf '%-36s %9.2f %9.2f\n' "(c) $layout" "${cconv[$layout]}" "${cnoop[$layout]}"
  printf '%-36s %9s %9s\n' "  / (c) 16x16" "$(r "${cconv[$layout]}" "$c")" "$(r "${cnoop[$layout]}" "$c_noop")"
done

if [ "$PROFILE" = 1 ]; then
  PB=(.venv/bin/ansible-playbook -i inventory/lab)
  # Not profile.py: that name would shadow the standard library's profile module.
  vm "cat > $DIR/nvmet_target_profile.py" <benchmarks/nvmet_target_profile.py
  step "profile: ssh, python start"
  t0=$(now); vm true; p_ssh=$(since "$t0")
  t0=$(now); vm "python3 -c pass"; p_py=$(since "$t0")
  for mode in "" "--cprofile 40"; do
    step "profile: in-process pass, 16x16 converge and no-op ${mode}"
    for run in converge noop; do
      vm "python3 $DIR/nvmet_target_profile.py --lib $DIR/lib $mode $DIR/16x16.json" \
        >"$LOG/profile_${run}${mode:+_cprofile}.txt"
    done
    clear_target 16x16
  done
  step "profile: ansible-playbook start, connection, the task alone"
  t0=$(now); "${PB[@]}" benchmarks/nvmet_bench_empty.yml >"$LOG/p_start.log" 2>&1; p_start=$(since "$t0")
  t0=$(now); "${PB[@]}" benchmarks/nvmet_bench_empty.yml -e nvmet_bench_hosts=te1 >"$LOG/p_ping.log" 2>&1; p_ping=$(since "$t0")
  # The task's fixed cost: the same task with a document that asks for nothing (the
  # module still starts, reads configfs and plans); what a layout adds is its time minus this.
  echo '{"hosts": [], "subsystems": [], "ports": []}' >"$LOG/empty.json"
  ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks "${PB[@]}" benchmarks/nvmet_target_profile.yml \
    -e "nvmet_bench_document=$LOG/empty.json" >"$LOG/p_task_empty.log" 2>&1
  for layout in 16x16 32x16; do
    for run in converge noop; do
      ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks "${PB[@]}" benchmarks/nvmet_target_profile.yml \
        -e "nvmet_bench_document=$LOG/$layout.json" >"$LOG/p_task_${layout}_$run.log" 2>&1
    done
    clear_target "$layout"
  done
  task() { grep -E '^Apply the document -+ ' "$1" | tail -1 | grep -oE '[0-9.]+s$' | tr -d s; }
  printf '\nwhere the time goes (seconds)\n'
  printf '%-52s %8.2f\n' "ssh to te1 (labctl ssh te1 true)" "$p_ssh"
  printf '%-52s %8.2f\n' "ssh + python3 start on te1" "$p_py"
  printf '%-52s %8.2f\n' "ansible-playbook start, no host, no task" "$p_start"
  printf '%-52s %8.2f\n' "ansible-playbook, one ping to te1" "$p_ping"
  for layout in 16x16 32x16; do
    printf '%-52s %8s %8s\n' "nvmet_target task alone, $layout converge / no-op" \
      "$(task "$LOG/p_task_${layout}_converge.log")" "$(task "$LOG/p_task_${layout}_noop.log")"
  done
  t_empty=$(task "$LOG/p_task_empty.log")
  printf '%-52s %8s\n' "nvmet_target task alone, empty document" "$t_empty"
  marginal() { echo "scale=2; ($(task "$LOG/p_task_32x16_$1.log") - $t_empty) / ($(task "$LOG/p_task_16x16_$1.log") - $t_empty)" | bc; }
  printf '%-52s %8s %8s\n' "32x16 / 16x16, task alone minus the empty document" "$(marginal converge)" "$(marginal noop)"
  for f in profile_converge profile_noop; do printf '\nin-process pass on te1, %s\n' "${f#profile_}"; cat "$LOG/$f.txt"; done
  printf '\ncProfile listings: %s/profile_*_cprofile.txt\n' "$LOG"
fi
vm "rm -rf $DIR"
