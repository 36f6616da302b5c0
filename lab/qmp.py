"""Send commands to a lab VM's QEMU over its QMP socket (used by lab/labctl).

    python3 lab/qmp.py SOCKET stop | cont | quit        a QMP command without arguments
    python3 lab/qmp.py SOCKET hmp 'savevm booted'       a human monitor command through QMP
    python3 lab/qmp.py SOCKET device_add '{"driver": ...}'  a QMP command with JSON arguments

Prints the command's return value; exits 1 with QEMU's error message when it fails
(an HMP command's error comes back as text in its return value, starting "Error").
"""

import json
import socket
import sys


def exchange(sock, reader, command, arguments=None):
    message = {"execute": command}
    if arguments:
        message["arguments"] = arguments
    sock.sendall(json.dumps(message).encode() + b"\n")
    while True:
        line = reader.readline()
        if not line:
            if command == "quit":
                return {}
            raise SystemExit("qmp: QEMU closed the monitor during %s" % command)
        reply = json.loads(line)
        # Asynchronous events (STOP, RESUME, ...) come on the same stream: skip them.
        if "return" in reply:
            return reply["return"]
        if "error" in reply:
            raise SystemExit("qmp: %s failed: %s" % (command, reply["error"].get("desc", reply["error"])))


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    path, command = argv[1], argv[2]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # savevm of a 1.5 GiB guest under load can take a while; never wait forever.
    sock.settimeout(600)
    sock.connect(path)
    reader = sock.makefile("r")
    reader.readline()  # the greeting
    exchange(sock, reader, "qmp_capabilities")
    if command == "hmp":
        text = exchange(sock, reader, "human-monitor-command", {"command-line": " ".join(argv[3:])})
        if "error" in text.lower():
            raise SystemExit("qmp: '%s': %s" % (" ".join(argv[3:]), text.strip()))
        if text.strip():
            print(text.strip())
    else:
        arguments = json.loads(argv[3]) if len(argv) > 3 else None
        print(json.dumps(exchange(sock, reader, command, arguments)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
