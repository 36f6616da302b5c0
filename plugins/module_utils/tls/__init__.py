# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVMe/TCP TLS pre-shared keys: their interchange format and identities (psk), the
collection's key store and the plan against the keyring (store), what the kernel keyring
shows and links and which derivation the installed nvme-cli inserts with (keyring), the TLS
PSK that derivation gives (derive), add_key(2) through libkeyutils (kernel_keys), the
boot-time loader (load) and the module's apply step (converge). Standard library only: the
loader runs at boot outside Ansible."""
