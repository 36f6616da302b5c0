# -*- coding: utf-8 -*-
"""nvme_connect's parameters as the module hands them to nvme/connection.py, every option
at its default, for the tests that build a desired connection."""

NQN = "nqn.2024-01.io.aiinfra.test:plain"


def connect_params(**over):
    base = dict(transport="tcp", traddr="10.99.0.1", trsvcid="4420", nqn=NQN, host_traddr=None, host_iface=None,
                hostnqn=None, hostid=None, ctrl_loss_tmo=None, reconnect_delay=None, keep_alive_tmo=None,
                nr_io_queues=None, queue_size=None, dhchap_secret=None, dhchap_ctrl_secret=None, tls=False,
                tls_key=None, keyring=None)
    base.update(over)
    return base
