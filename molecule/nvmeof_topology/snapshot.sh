#!/bin/sh
# The whole nvmet configfs tree: every entry (links with their target) and every
# readable attribute's value, sorted; "no nvmet" before the module is loaded.
[ -d /sys/kernel/config/nvmet ] || { echo "no nvmet"; exit 0; }
{ find /sys/kernel/config/nvmet -printf '%p %l\n'; grep -rs . /sys/kernel/config/nvmet; } | sort
