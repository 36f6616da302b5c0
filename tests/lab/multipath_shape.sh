# shellcheck shell=bash
# Sourced by the lab proofs that run on the two-link, four-drive shape (paths_heal.sh,
# port_maintenance.sh): from the repository root, with the lab's Ansible settings and the
# repository's virtual environment; stops with a message when the lab is not that shape.
repo=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
cd "$repo" || exit 2
export ANSIBLE_CONFIG=$repo/lab/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH=$repo/.cache/collections ANSIBLE_ROLES_PATH=$repo/roles
export PATH=$repo/.venv/bin:$PATH
[ "${AIINFRA_LAB_FABRIC_LINKS:-1}" = 2 ] || {
  echo "$(basename "$0"): set AIINFRA_LAB_NVME_DRIVES=4 AIINFRA_LAB_FABRIC_LINKS=2 (the lab shape it runs on)" >&2; exit 2; }
