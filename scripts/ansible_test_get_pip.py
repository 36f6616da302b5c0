"""Stand-in for ansible-test's pip bootstrap script (get-pip.py).

ansible-test downloads get-pip.py from ci-files.testing.ansible.com to put pip into
the empty virtual environments it makes for each sanity test; that host is not
reachable from every build machine. This does the same job with what is at hand:
the interpreter's own ensurepip, then pip installs the requested pip version (and any
other arguments ansible-test passes) from the configured package index.
"""

import subprocess
import sys

# get-pip.py options that plain `pip install` does not know.
GET_PIP_ONLY = {"--no-setuptools": "setuptools", "--no-wheel": "wheel"}


def main():
    args = sys.argv[1:]
    unwanted = [GET_PIP_ONLY[a] for a in args if a in GET_PIP_ONLY]
    # ensurepip in its own process: in-process it clears the PIP_* settings and the pip
    # configuration files (the package index, certificates) for everything after it.
    rc = subprocess.call([sys.executable, "-m", "ensurepip", "--upgrade"])
    if rc != 0:
        return rc
    pip = [sys.executable, "-m", "pip"]
    rc = subprocess.call(pip + ["install"] + [a for a in args if a not in GET_PIP_ONLY])
    if rc == 0 and unwanted:
        # ensurepip brings setuptools along; take out what the caller asked not to have.
        rc = subprocess.call(pip + ["uninstall", "-y", "-q"] + unwanted)
    return rc


if __name__ == "__main__":
    sys.exit(main())
