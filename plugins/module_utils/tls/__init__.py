# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVMe/TCP TLS pre-shared keys: their interchange format and identities (psk), the
collection's key store and the plan against the keyring (store), the kernel keyring and the
nvme-cli command that fills it (keyring), the boot-time loader (load) and the module's
apply step (converge). Standard library only: the loader runs at boot outside Ansible."""
