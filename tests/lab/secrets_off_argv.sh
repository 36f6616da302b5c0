#!/usr/bin/env bash
# Lab proof (issue 35, item 1): no DH-HMAC-CHAP secret and no TLS PSK in any process's command
# line or environment on te1 or te2, from a converge with bidirectional DH-HMAC-CHAP and TLS,
# through a reboot of both VMs, to the teardown - the boot-time units included.
#
#   lab/labctl up                       # the trixie lab (the default image)
#   tests/lab/secrets_off_argv.sh       # about 20-40 minutes under emulation
#
# On each VM a sampler (tests/lab/secret_sampler.py) runs as a systemd unit ordered before the
# collection's units (aiinfra-nvme-tls-keys, aiinfra-nvmet, tlshd, nvmf-autoconnect) and after
# local-fs, so it is up again early in the next boot. It reads every process's cmdline and
# environ every 50 ms, and every process the moment it calls exec() (the kernel's process events
# connector), looking for the three lab secrets (molecule/nvmeof_tcp/vars/dhchap.yml: the host's
# and the controller's DH-HMAC-CHAP secrets; molecule/nvmeof_tls/vars/tls.yml: te2's PSK), which
# it reads from a 0600 file, never from its command line. It counts the nvme-cli processes it
# read (by subcommand), keyctl and the collection's boot loaders, so a run that saw none of them
# fails: the check must have been able to catch them.
#
# Steps: install and start the samplers; converge playbooks/nvmeof_tcp.yml with both vars
# files (nvme_tls on both hosts, a TLS-only target port with DH-HMAC-CHAP both ways, te2's
# connection saved for nvmf-autoconnect, fstab mount); reboot te1 and wait for the target,
# then te2 and wait for the TLS connection and the mount; run playbooks/nvmeof_teardown.yml;
# stop the samplers and print what each saw, boot by boot. Exit 0 only with 0 hits on both
# VMs, nvme processes seen on both, the boot-time loaders seen after each reboot (te1: the key
# loader and the target restorer; te2: the key loader and nvme connect-all).
#
# Expected output ends with lines like (counts vary):
#   te2 boot 2: uptime at start 4.1 s, 6120 sweeps (every 70 ms, at most 900), exec events 1850,
#     420 processes, nvme 9 {connect-all: 1, check-tls-key: 2, ...}, keyctl 0, loaders {...}, hits 0
#   PASS: 0 hits; nvme processes seen: te1 N, te2 M
# and the JSON records are kept in .cache/lab-proofs/secrets-off-argv/<time>/ (SECRETS_LAB_OUT).
# SECRETS_LAB_KEEP=1 leaves the samplers installed on the VMs.
set -euo pipefail

repo=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
cd "$repo"
labctl=$repo/lab/labctl
vms=(te1 te2)
out=${SECRETS_LAB_OUT:-$repo/.cache/lab-proofs/secrets-off-argv/$(date +%Y%m%d-%H%M%S)}
unit=aiinfra-secret-sampler.service
libexec=/usr/local/libexec/aiinfra-secret-sampler
etc=/etc/aiinfra-secret-sampler
state=/var/lib/aiinfra-secret-sampler
tls_nqn=$(sed -n 's/^tls_lab_nqn: *//p' molecule/nvmeof_tls/vars/tls.yml)
mount_point=$(sed -n 's/^nvmeof_initiator_mount_point: *//p' molecule/nvmeof_tls/vars/tls.yml)
vars=(-e nvmeof_transport=tcp -e @molecule/nvmeof_tcp/vars/dhchap.yml -e @molecule/nvmeof_tls/vars/tls.yml)
export ANSIBLE_CONFIG=$repo/lab/ansible.cfg
export PATH=$repo/.venv/bin:$PATH

log() { printf '%s secrets-off-argv: %s\n' "$(date +%T)" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
# A command on a VM (ON_TIMEOUT seconds at most, 60 unless set).
on() { local vm=$1; shift; timeout "${ON_TIMEOUT:-60}" "$labctl" ssh "$vm" "$@"; }

mkdir -p "$out"
secrets=$(mktemp)
trap 'rm -f "$secrets"' EXIT
chmod 600 "$secrets"
python3 - > "$secrets" <<'EOF'
import yaml
dhchap = yaml.safe_load(open("molecule/nvmeof_tcp/vars/dhchap.yml"))
tls = yaml.safe_load(open("molecule/nvmeof_tls/vars/tls.yml"))
for value in (dhchap["nvmeof_initiator_dhchap_secret"], dhchap["nvmeof_initiator_dhchap_ctrl_secret"],
              tls["nvmeof_initiator_tls_psk"]):
    print(value)
EOF

for vm in "${vms[@]}"; do
  # shellcheck disable=SC2016  # single quotes on purpose: the VM's shell expands it
  release=$(on "$vm" '. /etc/os-release; echo "$VERSION_CODENAME"') || die "$vm does not answer: lab/labctl up first"
  [ "$release" = trixie ] || die "$vm runs $release: this proof needs the trixie lab (TLS: nvme-cli 2.13, tlshd)"
done

log "installing the samplers ($unit) on ${vms[*]}"
for vm in "${vms[@]}"; do
  on "$vm" "install -d -m 0755 $libexec && cat > $libexec/secret_sampler.py" < tests/lab/secret_sampler.py
  on "$vm" "install -d -m 0700 $etc && umask 077 && cat > $etc/secrets" < "$secrets"
  on "$vm" "cat > /etc/systemd/system/$unit" <<EOF
# Installed by tests/lab/secrets_off_argv.sh (aiinfra.fabric lab proof, issue 35): reads every
# process's cmdline and environ for the secrets in $etc/secrets.
[Unit]
Description=aiinfra.fabric lab proof: look for secrets in every process's cmdline and environ
DefaultDependencies=no
After=local-fs.target
Before=sysinit.target aiinfra-nvme-tls-keys.service aiinfra-nvmet.service tlshd.service
Before=nvmf-autoconnect.service nvmf-connect.target shutdown.target
Conflicts=shutdown.target

[Service]
Type=notify
NotifyAccess=main
ExecStart=/usr/bin/python3 $libexec/secret_sampler.py run --secrets $etc/secrets --state $state --interval 0.05
TimeoutStartSec=30
TimeoutStopSec=30

[Install]
WantedBy=sysinit.target
EOF
  on "$vm" "systemctl stop $unit 2>/dev/null; rm -rf $state; systemctl daemon-reload && systemctl enable --quiet $unit \
    && systemctl start $unit && systemctl is-active $unit" >/dev/null || die "the sampler did not start on $vm"
done

log "converging playbooks/nvmeof_tcp.yml with DH-HMAC-CHAP both ways and TLS"
ansible-playbook playbooks/nvmeof_tcp.yml "${vars[@]}" > "$out/converge.log" 2>&1 \
  || die "the converge failed: $out/converge.log"

# te2's controllers of the TLS subsystem: state, TLS key serial, whether each DH-HMAC-CHAP
# secret is set (the kernel shows "none" for one that is not; the value itself stays in the
# shell's variable and is never printed), and the mount.
connection() {
  on te2 sh -s "$tls_nqn" "$mount_point" <<'EOF_SH'
for c in /sys/class/nvme-fabrics/ctl/nvme*; do
  [ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$1" ] || continue
  out="${c##*/} state=$(cat "$c/state") tls_key=$(cat "$c/tls_key" 2>/dev/null)"
  for f in dhchap_secret dhchap_ctrl_secret; do
    v=$(cat "$c/$f" 2>/dev/null)
    if [ -n "$v" ] && [ "$v" != none ]; then out="$out $f=set"; else out="$out $f=unset"; fi
  done
  echo "$out"
done
echo "mount=$(findmnt -n -o SOURCE "$2" || echo none)"
EOF_SH
}
now=$(connection) || true
log "te2 after the converge: ${now//$'\n'/ }"
echo "$now" | grep -q 'state=live tls_key=[0-9a-f][0-9a-f]* dhchap_secret=set dhchap_ctrl_secret=set' \
  || die "no live TLS controller with both DH-HMAC-CHAP secrets on te2 after the converge"

boot_id() { on "$1" cat /proc/sys/kernel/random/boot_id 2>/dev/null || true; }
reboot_vm() {
  local vm=$1 old new
  old=$(boot_id "$vm")
  log "rebooting $vm"
  on "$vm" 'systemctl reboot --no-wall' >/dev/null 2>&1 || true
  for _ in $(seq 1 240); do
    sleep 5
    new=$(boot_id "$vm")
    [ -n "$new" ] && [ "$new" != "$old" ] && break
  done
  if [ -z "$new" ] || [ "$new" = "$old" ]; then die "$vm did not come back from its reboot"; fi
  # SSH itself may time out while the guest finishes booting on a busy host: ask again.
  for i in 1 2 3 4 5 6; do
    ON_TIMEOUT=960 on "$vm" 'timeout 900 systemctl is-system-running --wait >/dev/null; systemctl is-active '"$unit" \
      >/dev/null && break
    [ "$i" = 6 ] && die "the sampler is not running on $vm after its reboot"
    sleep 10
  done
}

reboot_vm te1
for _ in $(seq 1 60); do
  [ "$(on te1 systemctl is-active aiinfra-nvmet.service 2>/dev/null)" = active ] && break
  sleep 5
done
[ "$(on te1 systemctl is-active aiinfra-nvmet.service 2>/dev/null)" = active ] || die "te1's target did not come back"

reboot_vm te2
for _ in $(seq 1 60); do
  now=$(connection) || true
  echo "$now" | grep -q 'state=live' && ! echo "$now" | grep -q 'mount=none' && break
  sleep 5
done
log "te2 after its reboot: ${now//$'\n'/ }"
echo "$now" | grep -q 'state=live tls_key=[0-9a-f][0-9a-f]* dhchap_secret=set dhchap_ctrl_secret=set' \
  || die "the TLS connection with both DH-HMAC-CHAP secrets did not come back on te2 at boot"

log "tearing down with playbooks/nvmeof_teardown.yml"
ansible-playbook playbooks/nvmeof_teardown.yml "${vars[@]}" > "$out/teardown.log" 2>&1 \
  || die "the teardown failed: $out/teardown.log"

log "stopping the samplers and reading what they saw"
for vm in "${vms[@]}"; do
  on "$vm" "systemctl stop $unit; python3 $libexec/secret_sampler.py report $state" > "$out/$vm.json" || true
  if [ "${SECRETS_LAB_KEEP:-0}" != 1 ]; then
    on "$vm" "systemctl disable --quiet $unit; rm -f /etc/systemd/system/$unit; rm -rf $libexec $etc $state; \
      systemctl daemon-reload" || log "could not remove the sampler from $vm"
  fi
done

python3 - "$out" "${vms[@]}" <<'EOF'
import json
import sys

out, vms = sys.argv[1], sys.argv[2:]
failures, nvme = [], {}
for vm in vms:
    try:
        with open("%s/%s.json" % (out, vm)) as handle:
            records = json.load(handle)["records"]
    except (IOError, ValueError) as exc:
        failures.append("%s: no sampler report (%s)" % (vm, exc))
        continue
    nvme[vm] = sum(r["nvme_processes"] for r in records)
    for number, r in enumerate(records, 1):
        gaps = r["sweep_gap_ms"]
        print("%s boot %d: uptime at start %s s, %d sweeps (every %s ms, at most %s), exec events %d (%s, %d overruns),"
              % (vm, number, r["uptime_at_start_s"], r["sweeps"], gaps["mean"], gaps["max"], r["exec_events"],
                 r["exec_source"], r["exec_overruns"]))
        print("    %d processes, nvme %d %s, keyctl %d %s, loaders %s, hits %d%s"
              % (r["processes_seen"], r["nvme_processes"], json.dumps(r["nvme_commands"], sort_keys=True),
                 r["keyctl_processes"], json.dumps(r["keyctl_commands"], sort_keys=True),
                 json.dumps(r["boot_loaders"], sort_keys=True), r["hits"], "" if r["finished"] else " (not finished)"))
        for hit in r["hit_details"]:
            print("    HIT secret %d in the %s of pid %d (%s, %s), %d reads" % (
                hit["secret"], hit["field"], hit["pid"], hit["command"], hit["argv0"], hit["times"]))
        if r["hits"]:
            failures.append("%s boot %d: %d hits" % (vm, number, r["hits"]))
        if not r["finished"]:
            failures.append("%s boot %d: the sampler did not finish its record (killed?)" % (vm, number))
    if len(records) < 2:
        failures.append("%s: %d sampler record(s), expected one before and one after the reboot" % (vm, len(records)))
        continue
    if not nvme[vm]:
        failures.append("%s: the sampler saw no nvme process at all, so it could not have caught one" % vm)
    after = records[-1]
    wanted = {"te1": [("boot_loaders", "nvme-tls-keys"), ("boot_loaders", "nvmet-restore")],
              "te2": [("boot_loaders", "nvme-tls-keys"), ("nvme_commands", "connect-all")]}.get(vm, [])
    for field, name in wanted:
        if not after[field].get(name):
            failures.append("%s: the sampler of the boot after the reboot never saw %s" % (vm, name))
if failures:
    print("FAIL: " + "; ".join(failures))
    sys.exit(1)
print("PASS: 0 hits; nvme processes seen: %s" % ", ".join("%s %d" % (vm, nvme[vm]) for vm in vms))
EOF
