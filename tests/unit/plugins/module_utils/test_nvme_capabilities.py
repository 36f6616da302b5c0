"""Capability detection from nvme-cli's own help output and /dev/nvme-fabrics (real captures
from both lab releases: nvme-cli 2.3 on Debian 12, 2.13 on Debian 13; see the fixtures README)."""

import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.capabilities import (
    ConnectCapabilities, parse_fabrics_tokens, parse_long_options,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nvme_cli")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def caps_23():
    return ConnectCapabilities.from_outputs(fixture("connect-help-nvme-cli-2.3.txt"))


def test_options_of_nvme_cli_23_connect_help():
    options = parse_long_options(fixture("connect-help-nvme-cli-2.3.txt"))
    # The help is printed with bold escape sequences around the headings; options still parse.
    assert {"transport", "traddr", "trsvcid", "nqn", "dhchap-secret", "dhchap-ctrl-secret", "config",
            "dump-config", "output-format"} <= options
    assert not {"tls", "tls_key", "tls-key", "keyring", "concat"} & options


def test_description_column_is_not_read_as_options():
    text = "  [  --foo, -f ]   --- like --bar but louder\n  --baz    --- x\n"
    assert parse_long_options(text) == {"foo", "baz"}


def test_nvme_cli_23_has_no_tls_and_says_so():
    caps = caps_23()
    assert caps.tls is False and caps.keyring is False and caps.concat is False
    assert caps.json_config is True
    problems = caps.missing({"tls": True, "keyring": ".nvme"})
    assert len(problems) == 2
    assert "no --tls option" in problems[0] and "nvme-cli 2.3" in problems[0]
    assert "--keyring" in problems[1]
    # A connect with a secret (here the TLS key) is written to /dev/nvme-fabrics: nvme-cli's
    # --keyring is not used then, its --tls still is required.
    problems = caps.missing({"tls": True, "tls_key": "0x1", "keyring": ".nvme"}, through_kernel=True)
    assert len(problems) == 1 and "no --tls option" in problems[0]


def test_nothing_missing_without_tls():
    assert caps_23().missing({"tls": False, "concat": False}) == []


def test_fabrics_tokens_and_kernel_checks():
    tokens = parse_fabrics_tokens("instance=-1,cntlid=-1,transport=%s,traddr=%s,tls,concat\n")
    assert {"instance", "cntlid", "transport", "traddr", "tls", "concat"} == tokens
    help_text = "  [  --tls ]  --- enable TLS\n"
    caps = ConnectCapabilities.from_outputs(help_text, "instance=-1,transport=%s\n")
    problems = caps.missing({"tls": True, "concat": True})
    assert any("CONFIG_NVME_TCP_TLS" in p for p in problems)
    assert any("'nvme connect --concat'" in p for p in problems)
    assert any("kernel" in p and "concat" in p for p in problems)


def test_concat_through_the_kernel_needs_only_the_kernels_word():
    help_text = "  [  --tls ]  --- enable TLS\n"
    caps = ConnectCapabilities.from_outputs(help_text, "instance=-1,transport=%s,tls,concat\n")
    assert caps.missing({"tls": True, "concat": True}) != []
    assert caps.missing({"tls": True, "concat": True}, through_kernel=True) == []


def test_nvme_cli_213_on_the_debian_13_kernel():
    caps = ConnectCapabilities.from_outputs(fixture("connect-help-nvme-cli-2.13.txt"),
                                            fixture("dev-nvme-fabrics-6.12-deb13.txt"))
    assert caps.tls and caps.keyring and caps.concat and caps.json_config
    # 2.13 lists both spellings of the TLS key option (the module never passes it: a TLS key
    # goes to /dev/nvme-fabrics as a key serial).
    assert {"tls-key", "tls_key", "tls-key-identity"} <= caps.options
    assert caps.missing({"tls": True, "tls_key": "x", "keyring": ".nvme"}) == []
    # The 6.12 kernel takes tls but not concat: nvme-cli could, the kernel cannot, and the
    # message names the kernel.
    problems = caps.missing({"tls": True, "concat": True})
    assert len(problems) == 1 and "kernel" in problems[0] and "concat" in problems[0]


@pytest.mark.parametrize("release", ["2.3", "2.13"])
def test_connect_all_reads_the_json_config_in_both_releases(release):
    # nvme_connect persistent=true writes /etc/nvme/config.json only when the boot-time
    # 'nvme connect-all' lists --config (libnvme's JSON); both lab releases do.
    assert "config" in parse_long_options(fixture("connect-all-help-nvme-cli-%s.txt" % release))


def test_fast_io_fail_tmo_needs_an_nvme_cli_that_has_it():
    # Lab: nvme-cli 2.3 on Debian 12 said "connect: unrecognized option '--fast_io_fail_tmo=2'".
    problems = caps_23().missing({"fast_io_fail_tmo": 2})
    assert len(problems) == 1 and "no --fast_io_fail_tmo option" in problems[0]
    assert caps_23().missing({"fast_io_fail_tmo": None}) == []
    caps_213 = ConnectCapabilities.from_outputs(fixture("connect-help-nvme-cli-2.13.txt"))
    assert caps_213.missing({"fast_io_fail_tmo": 2}) == []
