"""changelogs/ is managed with antsibull-changelog: fragments and config lint clean."""

import os

from eco_helpers import TOP, run, tool


def test_antsibull_changelog_lint():
    proc = run([tool("antsibull-changelog"), "lint"], cwd=TOP)
    assert proc.stdout.strip() == "", proc.stdout


def test_every_fragment_is_yaml_in_a_known_section():
    import yaml

    with open(os.path.join(TOP, "changelogs", "config.yaml")) as f:
        sections = {s[0] for s in yaml.safe_load(f)["sections"]} | {"release_summary", "trivial"}
    frag_dir = os.path.join(TOP, "changelogs", "fragments")
    for name in os.listdir(frag_dir):
        if not name.endswith((".yml", ".yaml")):
            continue  # .keep holds the folder in git between releases (antsibull-changelog reads only YAML)
        with open(os.path.join(frag_dir, name)) as f:
            data = yaml.safe_load(f)
        # "add object.role", "add plugin.filter" ...: what antsibull-changelog does not find by itself.
        unknown = {k for k in data if not k.startswith(("add object.", "add plugin."))} - sections
        assert not unknown, (name, unknown)
