# shellcheck shell=sh
# What a host_config task would look at, in one shell command (a module task costs a
# Python start on the host; plugins/module_utils/hostconfig/quickcheck.py says why, reads
# the lines into the observation document that host_config's own planner judges, and
# observation.py says what that document holds). Every process counts on a slow host (about 60 ms a fork and exec on
# the lab's emulated guests), so the paths are read by one find and hashed by one
# sha256sum, whatever their number. Arguments, each KIND:NAME:
#   f:PATH  d:PATH  a:PATH   a file (hashed), a directory, a path that should be absent
#                            (only f: paths are hashed: a backing file to remove can be
#                            huge); absolute, normalized paths only (find would take "-x"
#                            for an option)
#   m:NAME                   a kernel module, as named under /sys/module (nvmet_rdma)
#   u:NAME                   a systemd unit
#   r:PATH                   a file to read back
# Lines (the path or name last, so blanks in it survive), in no particular order:
#   p - PATH                 nothing at PATH
#   s MODE OWNER GROUP TYPE PATH   TYPE as find's %y: f, d, l (symbolic link), ...
#   h SHA256  PATH           each regular file among the paths (sha256sum's line)
#   m loaded|- NAME
#   l NAME                   each module named in /etc/modules-load.d/*.conf (with an m: only)
#   u ENABLEMENT ACTIVITY NAME                (systemctl is-enabled, is-active; - when silent)
#   r BASE64|- PATH
n=$#; mods=
while [ "$n" -gt 0 ]; do
  a=$1; shift; n=$((n - 1))
  kind=${a%%:*}; name=${a#*:}
  case $kind in
    f|d|a)
      # Those that exist go back on the argument list, for find and sha256sum below; all
      # but the f: paths with one more leading slash (the same file to find), which keeps
      # them from sha256sum and is taken off again in their "s" lines.
      if [ "$kind" = f ]; then p=$name; else p=/$name; fi
      if [ -e "$name" ] || [ -L "$name" ]; then set -- "$@" "$p"; else echo "p - $name"; fi ;;
    m)
      mods=1
      if [ -d "/sys/module/$name" ]; then echo "m loaded $name"; else echo "m - $name"; fi ;;
    u)
      e=$(systemctl is-enabled "$name" 2>/dev/null); s=$(systemctl is-active "$name" 2>/dev/null)
      echo "u ${e:--} ${s:--} $name" ;;
    r)
      if [ -f "$name" ]; then echo "r $(base64 -w0 <"$name") $name"; else echo "r - $name"; fi ;;
  esac
done
# One find for both: its "s" lines as it meets each path, then sha256sum's lines for the
# regular files among the f: paths (a hex digest, or a backslash for a name it escaped;
# never "s "). Owner and group names hold no slash: a line's first " //" starts the path.
if [ $# -gt 0 ]; then
  find "$@" -maxdepth 0 -printf 's %m %u %g %y %p\n' -type f ! -path '//*' -exec sha256sum -- {} + 2>/dev/null |
    while IFS= read -r line; do
      case $line in
        "s "*" //"*) echo "${line%% //*} /${line#* //}" ;;
        "s "*) echo "$line" ;;
        *) echo "h $line" ;;
      esac
    done
fi
# Boot-time modules matter only to the modules asked about.
if [ -n "${mods:-}" ]; then
  sed -n 's/^[[:space:]]*\([A-Za-z0-9_-][A-Za-z0-9_-]*\)[[:space:]]*$/l \1/p' /etc/modules-load.d/*.conf 2>/dev/null
fi
true
